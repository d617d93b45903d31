package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// The diagonal tile of a causal query block by groups of rows (flashByRows, flashrows.go).
//
// The diagonal tile of a block of n rows, [n, n] per (batch, head), is half above the diagonal:
// computed, then masked. At B1 h8 L4096 (8 blocks of 512 rows, 36 tiles of 512 × 512 scores)
// that is 4 of the 36 tiles' products, maxima, exps and sums spent on −inf. Cut into G groups of
// n/G rows, group g (0-based) sees only the keys up to its own last row: a tile
// [n/G, (g+1)·n/G], masked on its last n/G columns. The groups compute (G+1)/(2G) of the [n, n]
// tile and waste 1/(2G) of it instead of 1/2: with G = 2, 3/4 of the tile, 5.5% fewer scores at
// long causal (blocks of 512) and llm causal (blocks of 128) alike. The groups' maxima, sums and
// weighted values are joined along the rows with Concatenate (small: [B, h, n, 1] and
// [B, h, n, dv]). G = 4 would save 2.8% more of the scores for about 20 more nodes per block,
// each a fork and join of both cores; in fastgo's BenchmarkMHA/long_causal (GOMAXPROCS=1, 8
// interleaved runs at load 8-9) the two were within the noise, so G stays at 2.

// flashByRowsGroupRows is the fewest rows of a group: a block of fewer than twice as many keeps
// its diagonal tile whole, and there are at most flashByRowsMaxGroups groups.
const (
	flashByRowsGroupRows = 64
	flashByRowsMaxGroups = 2
)

// flashByRowsSplits reports whether a causal block of rows rows (no window) cuts its diagonal
// tile by groups of rows.
func flashByRowsSplits(rows int) bool { return rows >= 2*flashByRowsGroupRows }

// flashByRowsDiagonalGroups returns the diagonal tile of the causal block of rows r0 … r0+rows−1
// (no window) as G = min(flashByRowsMaxGroups, rows/flashByRowsGroupRows) parts: group g, rows
// [g·rows/G, (g+1)·rows/G) (the last to rows), against keys r0 … r0 + its last row, each with
// its causal mask added (biases) and its values. qf, kf, vf: [L, B, h, d] (queries scaled);
// take cuts rows along axis 0 after the block's token.
func flashByRowsDiagonalGroups(take func(x *Node, from, n int) *Node, qf, kf, vf *Node, biases bandBiases, r0, rows int, fill float64) []flashByRowsPart {
	g := min(flashByRowsMaxGroups, rows/flashByRowsGroupRows)
	size := rows / g
	parts := make([]flashByRowsPart, g)
	for i := range g {
		first := i * size
		n := size
		if i == g-1 {
			n = rows - first
		}
		keys := first + n                                                     // the group's rows see keys r0 … r0+keys−1
		qg := take(qf, r0+first, n)                                           // [n, B, h, dk]
		kg, vg := take(kf, r0, keys), take(vf, r0, keys)                      // [keys, B, h, dk], [keys, B, h, dv]
		s := DotGeneral(qg, []int{3}, []int{1, 2}, kg, []int{3}, []int{1, 2}) // [B, h, n, keys]
		parts[i] = flashByRowsPart{s: biases.mask(s, r0+first, r0, -1, fill), v: vg, vLayout: 0}
	}
	return parts
}

// weigh returns the part's share of the softmax with the rows' maxima m [B, h, rows, 1]:
// Σ exp(s − m) [B, h, rows, 1] and exp(s − m)·v [B, h, rows, dv].
func (p flashByRowsPart) weigh(m *Node) (l, pv *Node) {
	e := Exp(Sub(p.s, m)) // [B, h, rows, cols]: m broadcast by Sub, not materialised
	// The product before the sum in the graph's order: fastgo then makes e inside the product
	// (fuse_expdot.go), and the sum takes the rows' sums it made.
	if p.vLayout == 2 {
		pv = DotGeneral(e, []int{3}, []int{0, 1}, p.v, []int{2}, []int{0, 1}) // [B, h, rows, dv]
	} else {
		pv = DotGeneral(e, []int{3}, []int{0, 1}, p.v, []int{0}, []int{1, 2}) // [B, h, rows, dv]
	}
	return ReduceAndKeep(e, ReduceSum, -1), pv
}
