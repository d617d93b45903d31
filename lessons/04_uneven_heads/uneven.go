// Package uneven is lesson 4: heads of different sizes, as when a model width of 440 is cut into
// heads of 100 features: 440 = 4×100 + 40.
//
// Read README.md, replace the TODOs below with your code, then run `mhalab lessons check 4`.
package uneven

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// HeadSizes cuts dModel into heads of headDim features and, when headDim does not divide
// dModel, one smaller last head for the rest: HeadSizes(440, 100) = [100 100 100 100 40].
func HeadSizes(dModel, headDim int) []int {
	// TODO: return the sizes.
	return nil
}

// SplitUnevenHeads cuts the last axis of x into heads of the given sizes (they sum to D):
//
//	x: [B, L, D] → heads[n]: [B, 1, L, sizes[n]]     heads[n][b, 0, l, d] = x[b, l, o_n + d]
//
// with o_n = sizes[0] + … + sizes[n−1], the first column of head n.
func SplitUnevenHeads(x *Node, sizes []int) []*Node {
	// TODO: one slice of the last axis per head, with a heads axis of size 1.
	return []*Node{x}
}

// UnevenAttention is multi-head attention over projected inputs with heads of the given sizes:
// for each head n, softmax(q_n·k_nᵀ/√d_n)·v_n with d_n = sizes[n], then the heads concatenated.
//
//	q: [B, Lq, D]   k: [B, Lk, D]   v: [B, Lk, D]   →   [B, Lq, D]
//
// You may use mhalib.ScaledDotProductAttention for each head (lesson 5 has you write it).
func UnevenAttention(q, k, v *Node, sizes []int) *Node {
	// TODO: split q, k and v, attend within each head, concatenate the head outputs.
	return q
}
