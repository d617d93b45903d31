//go:build solution

package heads

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// SplitHeads cuts the last axis of x into numHeads heads of D/numHeads features and moves the
// heads in front of the sequence axis:
//
//	x: [B, L, D] → [B, h, L, D/h]      out[b, n, l, d] = x[b, l, n·(D/h) + d]
//
// D is divisible by numHeads.
func SplitHeads(x *Node, numHeads int) *Node {
	dims := x.Shape().Dimensions
	B, L, D := dims[0], dims[1], dims[2]
	x = Reshape(x, B, L, numHeads, D/numHeads) // [B, L, h, dk]: row-major, so head n owns columns n·dk…
	return TransposeAllDims(x, 0, 2, 1, 3)     // [B, h, L, dk]
}

// MergeHeads is the inverse of SplitHeads, concatenating the heads along the features:
//
//	x: [B, h, L, dk] → [B, L, h·dk]     out[b, l, n·dk + d] = x[b, n, l, d]
func MergeHeads(x *Node) *Node {
	dims := x.Shape().Dimensions
	B, h, L, dk := dims[0], dims[1], dims[2], dims[3]
	x = TransposeAllDims(x, 0, 2, 1, 3) // [B, L, h, dk]
	return Reshape(x, B, L, h*dk)       // [B, L, h·dk]
}
