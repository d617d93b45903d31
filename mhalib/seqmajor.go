package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// Attention's operands in the layout the projections write. q, k and v are [B, h, L, d] to
// attention, but a projection writes [B, L, h·d]: SplitHeads' transpose to head-major order is
// a pass of its own over each of them on the pure-Go backend, where every node is one (XLA
// folds the transpose into the products). The products do not need it: a DotGeneral may batch
// over axes 0 and 2 of [B, L, h, d], giving the same [B, h, Lq, Lk] scores and [B, h, Lq, dv]
// output, each value the same sum of the same products. headsOperand carries q or k, [B, h, L, d],
// in either layout to the scores' product.
//
// MultiHeadAttention reads q and k so on the pure-Go backend, and transposes v (attention takes
// it head-major): fastgo's
// BenchmarkMHA/seed003_causal (B32 L128 E512 h8), op by op ("ops_sequential", MHALAB_OPPROF),
// spent 5.9–6.3 ms a pass in its four transposes and 2.4–2.5 ms in the two left, with the
// scores' product unchanged within the noise (6.3–7.1 ms against 6.9–7.5); reading v
// sequence-major as well removed one more transpose (~1.2 ms) but made the weighted sum of the
// values, whose product then reads 16-value runs 2 KiB apart instead of 256 B, slower by more
// (8.4–8.9 ms → 9.2–10.4 ms).

// headsOperand is q or k [B, h, L, d] of attention: node itself (head-major), or node
// [B, L, h, d] read through its axes (seqMajor).
type headsOperand struct {
	node     *Node
	seqMajor bool
}

// headMajor wraps a [B, h, L, d] node.
func headMajor(x *Node) headsOperand { return headsOperand{node: x} }

// seqMajorHeads wraps x [B, L, h·d] (a projection's output) as the [B, h, L, d] operand of h
// heads, without moving data: node [B, L, h, d].
func seqMajorHeads(x *Node, h int) headsOperand {
	dims := x.Shape().Dimensions
	return headsOperand{node: Reshape(x, dims[0], dims[1], h, dims[2]/h), seqMajor: true} // [B, L, h, d]
}

// axes returns the positions of the head (batch of the products) and length axes in node.
func (x headsOperand) axes() (head, length int) {
	if x.seqMajor {
		return 2, 1
	}
	return 1, 2
}

// heads returns the number of heads h.
func (x headsOperand) heads() int {
	head, _ := x.axes()
	return x.node.Shape().Dim(head)
}

// length returns L.
func (x headsOperand) length() int {
	_, length := x.axes()
	return x.node.Shape().Dim(length)
}

// scaled returns x·s (the same layout).
func (x headsOperand) scaled(s float64) headsOperand {
	return headsOperand{node: MulScalar(x.node, s), seqMajor: x.seqMajor}
}

// headsScores returns q·kᵀ [B, h, Lq, Lk] for q [B, Hq, Lq, dk] and k [B, Hkv, Lk, dk] in either
// layout (seqMajor only with Hq = Hkv; gqa.go otherwise).
func headsScores(q, k headsOperand) *Node {
	if !q.seqMajor && !k.seqMajor {
		return groupedScores(q.node, k.node) // [B, Hq, Lq, Lk]
	}
	if q.heads() != k.heads() {
		panicArg("k", "shape %s: sequence-major heads need as many key as query heads (q %s)", k.node.Shape(), q.node.Shape())
	}
	qh, _ := q.axes()
	kh, _ := k.axes()
	return DotGeneral(q.node, []int{3}, []int{0, qh}, k.node, []int{3}, []int{0, kh}) // [B, h, Lq, Lk]
}
