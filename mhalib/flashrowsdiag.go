package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// The diagonal tile of a causal query block in two halves (flashByRows, flashrows.go).
//
// The diagonal tile of a block of n rows, [n, n] per (batch, head), is half above the diagonal:
// computed, then masked. At B1 h8 L4096 (8 blocks of 512 rows, 36 tiles of 512 × 512 scores)
// that is 4 of the 36 tiles' products, maxima, exps and sums spent on −inf. Cut into a first
// half of rows h0 = n/2, which sees only the first h0 keys (a masked [h0, h0] tile), and the
// rest, which sees all n (a [n − h0, n] tile masked on its right half), the block computes
// 3/4 of the tile and wastes 1/4 of it instead of 1/2: 5.5% fewer scores at long causal and at
// llm causal alike (every block's diagonal is 1/(blocks + 1)… of its keys). The halves' maxima,
// sums and weighted values are joined along the rows with Concatenate (small: [B, h, n, 1] and
// [B, h, n, dv]).

// flashByRowsSplitRows is the fewest rows of a block whose diagonal tile is cut in halves.
const flashByRowsSplitRows = 64

// flashByRowsDiagonalHalves returns the diagonal tile of the causal block of rows r0 … r0+rows−1
// (no window) as two parts: rows [0, h0) against keys r0 … r0+h0−1, and rows [h0, rows) against
// keys r0 … r0+rows−1, h0 = rows/2, each with its causal mask added (biases) and its values.
// qf, kf, vf: [L, B, h, d] (queries scaled); take cuts rows along axis 0 after the block's token.
func flashByRowsDiagonalHalves(take func(x *Node, from, n int) *Node, qf, kf, vf *Node, biases bandBiases, r0, rows int, fill float64) []flashByRowsPart {
	h0 := rows / 2
	qa, qb := take(qf, r0, h0), take(qf, r0+h0, rows-h0)                   // [h0, B, h, dk], [rows−h0, B, h, dk]
	ka, va := take(kf, r0, h0), take(vf, r0, h0)                           // [h0, B, h, dk], [h0, B, h, dv]
	kd, vd := take(kf, r0, rows), take(vf, r0, rows)                       // [rows, B, h, dk], [rows, B, h, dv]
	sa := DotGeneral(qa, []int{3}, []int{1, 2}, ka, []int{3}, []int{1, 2}) // [B, h, h0, h0]
	sb := DotGeneral(qb, []int{3}, []int{1, 2}, kd, []int{3}, []int{1, 2}) // [B, h, rows−h0, rows]
	return []flashByRowsPart{
		{s: biases.mask(sa, r0, r0, -1, fill), v: va, vLayout: 0},
		{s: biases.mask(sb, r0+h0, r0, -1, fill), v: vd, vLayout: 0},
	}
}

// weigh returns the part's share of the softmax with the rows' maxima m [B, h, rows, 1]:
// Σ exp(s − m) [B, h, rows, 1] and exp(s − m)·v [B, h, rows, dv].
func (p flashByRowsPart) weigh(m *Node) (l, pv *Node) {
	e := Exp(Sub(p.s, m)) // [B, h, rows, cols]: m broadcast by Sub, not materialised
	l = ReduceAndKeep(e, ReduceSum, -1)
	if p.vLayout == 2 {
		return l, DotGeneral(e, []int{3}, []int{0, 1}, p.v, []int{2}, []int{0, 1}) // [B, h, rows, dv]
	}
	return l, DotGeneral(e, []int{3}, []int{0, 1}, p.v, []int{0}, []int{1, 2}) // [B, h, rows, dv]
}
