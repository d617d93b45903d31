package mhalib

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// Sliding-window (local) attention, as Mistral, Gemma 2/3's local layers and gpt-oss use it:
// each query sees only the keys near its own position,
//
//	p − Left ≤ j ≤ p + Right
//
// where p is the query's position among the keys: p = i aligned at the top-left corner, or
// p = i + Lk − Lq aligned at the bottom-right corner (the Lq queries are the last Lq positions,
// as when decoding after Lk − Lq cached tokens; FlashAttention's window_size convention). A
// negative side is unbounded. Window(w, 0) with causal is the usual "last w+1 tokens".
//
// Work and memory of a window: FlashAttention visits only the tiles that touch the window (rows
// enter when their window starts and leave when it ends), so its work grows as Lq·(Left+Right)
// rather than Lq·Lk; a KV cache needs to keep only the last Left+1 positions.

// Alignment says where the query positions sit among the keys.
type Alignment int

const (
	// AlignTopLeft: query i is at position i (as SDPA's is_causal).
	AlignTopLeft Alignment = iota
	// AlignBottomRight: query i is at position i + Lk − Lq (the queries are the last ones).
	AlignBottomRight
)

// String names the alignment.
func (a Alignment) String() string {
	if a == AlignBottomRight {
		return "AlignBottomRight"
	}
	return "AlignTopLeft"
}

// Window is a sliding window of keys around each query's position (see AttentionOptions.Window).
type Window struct {
	Left, Right int // keys before and after the query's position; negative: unbounded
	Align       Alignment
}

// shift is the position of query row 0 among lk keys for lq queries.
func (w Window) shift(lq, lk int) int {
	if w.Align == AlignBottomRight {
		return lk - lq
	}
	return 0
}

// keyRange returns the keys [lo, hi] the query at position p sees (clamped to [0, lk−1]; lo > hi
// when none).
func (w Window) keyRange(p, lk int) (lo, hi int) {
	lo, hi = 0, lk-1
	if w.Left >= 0 {
		lo = max(lo, p-w.Left)
	}
	if w.Right >= 0 {
		hi = min(hi, p+w.Right)
	}
	return lo, hi
}

// windowTile is the window's "may attend" tile [1, 1, rows, cols] for query rows
// [rowOff, rowOff+rows) and keys [colOff, colOff+cols), or nil when every pair of the tile is
// inside the window. Keys at or after ms.causalLk (add_bias_kv / add_zero_attn) are always seen.
func (ms *maskSet) windowTile(g *Graph, rowOff, rows, colOff, cols int) *Node {
	w := ms.window
	if w == nil {
		return nil
	}
	shift := w.shift(ms.lq, ms.causalLk)
	// Every pair inside? The first row's window must reach the last column and the last row's
	// window the first column (windows move right with the row).
	lastCol := min(colOff+cols, ms.causalLk) - 1
	_, firstHi := w.keyRange(rowOff+shift, ms.causalLk)
	lastLo, _ := w.keyRange(rowOff+rows-1+shift, ms.causalLk)
	if lastLo <= colOff && firstHi >= lastCol {
		return nil
	}
	p, j := ms.tilePositions(g, rowOff, rows, colOff, cols, shift) // query and key positions, [1, 1, rows, cols]
	var parts []*Node
	if w.Left >= 0 {
		parts = append(parts, GreaterOrEqual(j, AddScalar(p, float64(-w.Left)))) // j ≥ p − Left
	}
	if w.Right >= 0 {
		parts = append(parts, LessOrEqual(j, AddScalar(p, float64(w.Right)))) // j ≤ p + Right
	}
	inside := combine(parts, LogicalAnd)
	return LogicalOr(inside, GreaterOrEqual(j, Scalar(g, dtypes.Int32, ms.causalLk))) // [1, 1, rows, cols]
}
