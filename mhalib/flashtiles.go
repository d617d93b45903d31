package mhalib

import "fmt"

// Which tiles of scores FlashAttention computes.
//
// FlashAttention walks the keys block by block (BlockK keys each). For each key block it
// computes the scores of one contiguous range of query rows, whole query blocks (BlockQ rows
// each): a query block enters when some of its rows may see a key of the current block, and
// leaves, finished, when none of its rows sees a key from the current block on. With a causal
// mask the tiles above the diagonal are never computed; with a sliding window, neither are the
// tiles wholly before the window. flashPlan is that schedule, on host integers; flashAttend
// follows it, and FlashTiles shows it (for pictures and counts of the work skipped).
//
// On the pure-Go backend, attention with no mask but the causal one is computed by query
// blocks against all the keys they see instead (flashrows.go, its own block size, at most
// BlockQ): of the pairs above the diagonal only those in the diagonal blocks are computed.

// FlashTile is one tile of scores FlashAttention computes: query rows [Row0, Row1) against keys
// [Col0, Col1) (all heads and batch elements at once).
type FlashTile struct {
	Row0, Row1, Col0, Col1 int
}

// FlashTiles returns the tiles FlashAttention computes, in order, for lq queries and lk keys
// with block sizes blockQ × blockK, the causal rule causal and, when window is not nil, a
// sliding window (as FlashBuilder's Window). The tiles cover every pair a query may see.
// It returns an *ArgumentError for non-positive sizes or an unknown alignment.
func FlashTiles(lq, lk, blockQ, blockK int, causal Causal, window *Window) ([]FlashTile, error) {
	if lq < 1 || lk < 1 || blockQ < 1 || blockK < 1 {
		return nil, &ArgumentError{Arg: "FlashTiles", Msg: fmt.Sprintf("lq=%d, lk=%d, blockQ=%d, blockK=%d: all must be ≥ 1", lq, lk, blockQ, blockK)}
	}
	if window != nil && window.Align != AlignTopLeft && window.Align != AlignBottomRight {
		return nil, &ArgumentError{Arg: "Window", Msg: fmt.Sprintf("unknown alignment %d", int(window.Align))}
	}
	ms := &maskSet{lq: lq, lk: lk, causal: causal, causalLk: lk, window: window}
	return ms.flashPlan(blockQ, blockK), nil
}

// flashPlan returns the tiles flashAttend computes for ms's shapes, causal rule and window.
// Rows [Row0, Row1) of a tile are the rows still being computed when its key block comes:
// rows before Row0 are finished (they see no key from Col0 on).
func (ms *maskSet) flashPlan(blockQ, blockK int) []FlashTile {
	lq, lk := ms.lq, ms.lk
	causal, win := ms.causal, ms.window
	rowsOf := func(qb int) (r0, r1 int) { return qb * blockQ, min((qb+1)*blockQ, lq) - 1 }
	// seesFrom reports whether a row of query block qb sees a key at or after column c; keys
	// from ms.causalLk on (add_bias_kv / add_zero_attn) are visible to all.
	seesFrom := func(qb, c int) bool {
		_, r1 := rowsOf(qb)
		if lk > ms.causalLk {
			return true
		}
		hi := lk - 1
		if causal != NoCausal {
			hi = min(hi, ms.queryPosition(r1))
		}
		if win != nil {
			_, wHi := win.keyRange(r1+win.shift(lq, ms.causalLk), ms.causalLk)
			hi = min(hi, wHi)
		}
		return hi >= c
	}
	// seesBefore reports whether a row of query block qb may see a key before column c.
	seesBefore := func(qb, c int) bool {
		if win == nil || lk > ms.causalLk {
			return true
		}
		r0, _ := rowsOf(qb)
		lo, _ := win.keyRange(r0+win.shift(lq, ms.causalLk), ms.causalLk)
		return lo < c
	}
	numQBlocks := (lq + blockQ - 1) / blockQ

	var tiles []FlashTile
	first, end := 0, 0 // rows [first, end) are being computed
	for c0 := 0; c0 < lk; c0 += blockK {
		cols := min(blockK, lk-c0)
		// Finish the query blocks that see no key from c0 on (a prefix of the remaining rows).
		firstBlock := first / blockQ
		for firstBlock < numQBlocks && !seesFrom(firstBlock, c0) {
			firstBlock++
		}
		first = max(first, min(firstBlock*blockQ, lq))
		end = max(end, first)
		if first == lq {
			break // every row is finished: the remaining key blocks are above the diagonal
		}
		// Let in the query blocks whose keys start before the end of this key block.
		for qb := end / blockQ; qb < numQBlocks && seesBefore(qb, c0+cols); qb++ {
			_, r1 := rowsOf(qb)
			end = r1 + 1
		}
		if end == first {
			continue // no row sees this key block (a window that starts later)
		}
		tiles = append(tiles, FlashTile{Row0: first, Row1: end, Col0: c0, Col1: c0 + cols})
	}
	return tiles
}
