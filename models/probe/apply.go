package probe

import (
	"fmt"

	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// Apply replaces the ablated heads of one layer in z, the heads' outputs before the output
// projection:
//
//	z [B, H, L, dk], keep [layers, H], replace [layers, H, dk]  →  z·k + r·(1 − k)   [B, H, L, dk]
//
// with k = keep[layer] and r = replace[layer] (Ablation.Inputs). A kept head's output passes
// unchanged (z·1 + r·0 is exactly z); an ablated one becomes r at every position.
func Apply(z, keep, replace *Node, layer int) *Node {
	H, dk := z.Shape().Dim(1), z.Shape().Dim(3)
	if z.Rank() != 4 || keep.Rank() != 2 || keep.Shape().Dim(1) != H || replace.Rank() != 3 ||
		replace.Shape().Dim(1) != H || replace.Shape().Dim(2) != dk || layer < 0 || layer >= keep.Shape().Dim(0) {
		panic(fmt.Errorf("probe: Apply(z %s, keep %s, replace %s, layer %d): want z [B, H, L, dk], keep [layers, H], replace [layers, H, dk], 0 ≤ layer < layers",
			z.Shape(), keep.Shape(), replace.Shape(), layer))
	}
	k := Reshape(Slice(keep, AxisElem(layer)), 1, H, 1, 1)                     // [1, H, 1, 1]
	r := Reshape(Slice(replace, AxisElem(layer)), 1, H, 1, dk)                 // [1, H, 1, dk]
	r = Mul(r, OneMinus(k))                                                    // [1, H, 1, dk]
	return Add(Mul(z, ConvertDType(k, z.DType())), ConvertDType(r, z.DType())) // [B, H, L, dk]
}
