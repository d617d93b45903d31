//go:build solution

package uneven

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/mhalib"
)

// HeadSizes cuts dModel into heads of headDim features and, when headDim does not divide
// dModel, one smaller last head for the rest: HeadSizes(440, 100) = [100 100 100 100 40].
func HeadSizes(dModel, headDim int) []int {
	var sizes []int
	for rest := dModel; rest > 0; rest -= headDim {
		sizes = append(sizes, min(headDim, rest))
	}
	return sizes
}

// SplitUnevenHeads cuts the last axis of x into heads of the given sizes (they sum to D):
//
//	x: [B, L, D] → heads[n]: [B, 1, L, sizes[n]]     heads[n][b, 0, l, d] = x[b, l, o_n + d]
//
// with o_n = sizes[0] + … + sizes[n−1], the first column of head n.
func SplitUnevenHeads(x *Node, sizes []int) []*Node {
	heads := make([]*Node, len(sizes))
	offset := 0
	for n, d := range sizes {
		head := SliceAxis(x, -1, AxisRange(offset, offset+d)) // [B, L, d]
		heads[n] = InsertAxes(head, 1)                        // [B, 1, L, d]
		offset += d
	}
	return heads
}

// UnevenAttention is multi-head attention over projected inputs with heads of the given sizes:
// for each head n, softmax(q_n·k_nᵀ/√d_n)·v_n with d_n = sizes[n], then the heads concatenated.
//
//	q: [B, Lq, D]   k: [B, Lk, D]   v: [B, Lk, D]   →   [B, Lq, D]
//
// You may use mhalib.ScaledDotProductAttention for each head (lesson 5 has you write it).
func UnevenAttention(q, k, v *Node, sizes []int) *Node {
	qs, ks, vs := SplitUnevenHeads(q, sizes), SplitUnevenHeads(k, sizes), SplitUnevenHeads(v, sizes)
	outs := make([]*Node, len(sizes))
	for n := range sizes {
		// Default scale 1/√d_n: d_n is the last axis of this head's q, so every head gets its own.
		out := mhalib.ScaledDotProductAttention(qs[n], ks[n], vs[n]).Done() // [B, 1, Lq, d_n]
		outs[n] = Squeeze(out, 1)                                           // [B, Lq, d_n]
	}
	return Concatenate(outs, -1) // [B, Lq, D]
}
