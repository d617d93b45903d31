package mhalib

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
)

// The mask of any tile (row/column offsets), as block-wise attention asks for it, equals the
// same tile of the whole masked matrix.
func TestMaskSetTiles(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, h, lq, lk = 2, 3, 5, 7
		rng := rand.New(rand.NewPCG(4, 4))
		rnd := func(n int) []float64 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = rng.Float64()*2 - 1
			}
			return xs
		}
		bools := func(n int) []bool {
			xs := make([]bool, n)
			for i := range xs {
				xs[i] = rng.Float64() < 0.3
			}
			return xs
		}
		logits := tensors.FromFlatDataAndDimensions(rnd(B*h*lq*lk), B, h, lq, lk)
		attn := tensors.FromFlatDataAndDimensions(bools(B*h*lq*lk), B*h, lq, lk)
		pad := tensors.FromFlatDataAndDimensions(rnd(B*lk), B, lk)
		for _, causal := range []Causal{NoCausal, CausalTopLeft, CausalBottomRight} {
			for _, tile := range [][4]int{{0, lq, 0, lk}, {1, 2, 3, 4}, {4, 1, 0, 7}, {0, 3, 5, 2}} {
				rowOff, rows, colOff, cols := tile[0], tile[1], tile[2], tile[3]
				res := MustExecOnceN(backend, func(logits, attn, pad *Node) []*Node {
					ms := newMaskSet(B, h, lq, lk, dtypes.Float64, MaskBlockedWhereTrue(attn), "mask",
						MaskAdditive(pad), "key padding mask", causal, -1e9)
					full := ms.apply(logits, 0, 0)
					part := ms.apply(sliceAxis(sliceAxis(logits, 2, rowOff, rows), 3, colOff, cols), rowOff, colOff)
					want := sliceAxis(sliceAxis(full, 2, rowOff, rows), 3, colOff, cols)
					return []*Node{part, want}
				}, logits, attn, pad)
				got, want := tensors.MustCopyFlatData[float64](res[0]), tensors.MustCopyFlatData[float64](res[1])
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("causal %s, tile %v: element %d = %g, want %g", causal, tile, i, got[i], want[i])
					}
				}
			}
		}
	})
}
