package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// FlashAttention on the pure-Go backend with the masks flashByRows does not take (attention and
// key padding masks, additive masks, ALiBi, soft-cap, sinks, GQA, extra keys): flashAttend's
// recurrence (flashRows.step), one query block at a time.
//
// flashAttend computes every key block against all the rows still being computed, so its tiles
// [B, h, rows, BlockK] and state [B, h, rows, dv+1] shrink by BlockQ rows whenever a query block
// finishes (causal), and every step has buffers of a size of its own. The pure-Go backend keeps
// the buffers it frees in pools by exact size (flashByRowsChunk), so the process kept them all:
// O(Lq²·BlockK/BlockQ) (TestFlashGradientGoPoolsAreLinear with a key padding mask: 3.65× from L
// 1024 to 2048, 3.82× to 4096). Here each query block of BlockQ rows meets its key blocks
// (flashPlan's tiles that hold its rows) one after another with its own state: every tile is
// [B, h, BlockQ, BlockK] and every state [B, h, BlockQ, dv+1] (the last query block may be
// shorter), so the buffers of one block are reused by the next. Every slice of q, k and v waits
// for the previous step (takeRowsAfter): the backend would otherwise cut them all up front.

// flashByBlocks is flashAttend (same arguments and results) by query blocks, for the pure-Go
// backend.
func flashByBlocks(qIn, k, v *Node, scale float64, ms *maskSet, blockQ, blockK int, withLSE bool) (output, lse *Node) {
	batch, heads, lq, lk := ms.batch, ms.heads, ms.lq, ms.lk
	hkv := k.Shape().Dim(1)
	g := qIn.Graph()
	dtype := qIn.DType()
	dv := v.Shape().Dim(-1)

	q := MulScalar(qIn, scale)                             // [B, Hq, Lq, dk]
	ones := Ones(g, shapes.Make(dtype, batch, hkv, lk, 1)) // [B, Hkv, Lk, 1]
	v1 := concatAxis([]*Node{v, ones}, 3)                  // [B, Hkv, Lk, dv+1]
	qf := TransposeAllDims(q, axisToFront(4, 2)...)        // [Lq, B, Hq, dk]
	kf := TransposeAllDims(k, axisToFront(4, 2)...)        // [Lk, B, Hkv, dk]
	vf := TransposeAllDims(v1, axisToFront(4, 2)...)       // [Lk, B, Hkv, dv+1]
	plan := ms.flashPlan(blockQ, blockK)
	var token *Node // the previous step's token
	// take returns rows [from, from+n) of x [L, B, h, d] as [B, h, n, d], cut after token.
	take := func(x *Node, from, n int) *Node {
		return TransposeAllDims(takeRowsAfter(x, from, n, token), axisFromFront(4, 2)...)
	}

	var outs, lses []*Node
	for r0 := 0; r0 < lq; r0 += blockQ {
		rows := min(blockQ, lq-r0)
		st := &flashRows{first: r0, end: r0, dv: dv, withL: withLSE, batch: batch, heads: heads, dtype: dtype, sinks: ms.sinks, graph: g, token: token}
		st.enter(r0 + rows)
		qa := take(qf, r0, rows) // [B, Hq, rows, dk]
		for _, t := range plan {
			if r0 < t.Row0 || r0 >= t.Row1 {
				continue // the tile's rows are not this block's
			}
			c0, cols := t.Col0, t.Col1-t.Col0
			token = st.token
			kb, vb := take(kf, c0, cols), take(vf, c0, cols) // [B, Hkv, cols, dk], [B, Hkv, cols, dv+1]
			st.step(qa, kb, vb, ms, c0)
		}
		st.finish(rows)
		outs, lses = append(outs, st.outs...), append(lses, st.lses...)
		token = st.token
	}
	output = joinRows(outs) // [B, Hq, Lq, dv]
	if withLSE {
		lse = Reshape(joinRows(lses), batch, heads, lq) // [B, Hq, Lq]
	}
	return output, lse
}
