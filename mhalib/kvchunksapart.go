package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// A one-token step on XLA with the new key and value attended apart from the tail.
//
// stepOne writes the new key and value into the tail and attends over the written tail. On
// XLA that written tail has two users, the variable's new value (a fresh buffer: GoMLX v0.26
// declares no input/output aliasing) and the step's products, and XLA's CPU compiler computes
// it twice: once in place in a copy of the old tail, for the output, and once more into a
// buffer of its own, for the products — each a pass over a [B, h, T, d] tail, for keys and
// values, in every layer (the modern suite's decoding step at 32 key/value heads: 4 × 2 MiB
// read and written per layer, besides the copies). stepOneApart attends over the old tail
// instead, its row pos (stale) masked, and over the new key and value as one extra column:
// the written tail then only becomes the variable's new value.
//
//	scores [B, Hq, 1, C·T + 1] = [q·chunk_0ᵀ … q·chunk_{C−2}ᵀ, q·old_tailᵀ, q·kᵀ]
//	output [B, Hq, 1, dv] = Σ_i w_i·values_i + w_tail·old_tail_v + w_new·v

// stepOneApart is stepOne with the new key k [B, h, 1, dk] and value v [B, h, 1, dv] attended
// apart from the tail (above); it returns [B, Hq, 1, dv].
func (c *KVCache) stepOneApart(s *chunkSet, q, k, v, pos *Node, scale float64) *Node {
	g := q.Graph()
	T, C := c.chunkLen, c.numChunks()
	t := Div(pos, Scalar(g, dtypes.Int32, T)) // the chunk of pos
	off := Sub(pos, MulScalar(t, float64(T))) // pos's row in the tail
	var old [2]*Node                          // the tails before this step, [B, h, T, d]
	for kv, x := range []*Node{k, v} {
		old[kv] = s.tail[kv].ValueGraph(g)
		s.tail[kv].SetValueGraph(placeRows(old[kv], x, off)) // [B, h, T, d]
	}
	qs := MulScalar(q, scale) // [B, Hq, 1, dk]
	parts := make([]*Node, 0, C+1)
	for i := range C - 1 {
		parts = append(parts, groupedScores(qs, s.chunks[0][i].ValueGraph(g))) // [B, Hq, 1, T]
	}
	parts = append(parts, groupedScores(qs, old[0]), groupedScores(qs, k)) // [B, Hq, 1, T], [B, Hq, 1, 1]
	raw := Concatenate(parts, 3)                                           // [B, Hq, 1, C·T+1]
	col := Iota(g, shapes.Make(dtypes.Int32, 1, 1, 1, C*T+1), 3)           // [1, 1, 1, C·T+1]
	first := Scalar(g, dtypes.Int32, (C-1)*T)                              // the tail's first column
	inTail := LogicalOr(LessThan(Sub(col, first), off), Equal(col, Scalar(g, dtypes.Int32, C*T)))
	seen := Where(LessThan(col, first), LessThan(col, MulScalar(t, float64(T))), inTail) // [1, 1, 1, C·T+1]
	// As stepOne: an additive 0/−inf bias over one row and the plain softmax (the new column is
	// always seen).
	bias := Where(seen, ScalarZero(g, raw.DType()), Scalar(g, raw.DType(), math.Inf(-1)))                      // [1, 1, 1, C·T+1]
	weights := softmaxValues(Add(raw, bias))                                                                   // [B, Hq, 1, C·T+1]
	out := groupedWeightedSum(Slice(weights, AxisRange(), AxisRange(), AxisRange(), AxisRange(C*T, C*T+1)), v) // [B, Hq, 1, dv]
	for i := range C {
		w := Slice(weights, AxisRange(), AxisRange(), AxisRange(), AxisRange(i*T, (i+1)*T)) // [B, Hq, 1, T]
		vals := old[1]
		if i < C-1 {
			vals = s.chunks[1][i].ValueGraph(g)
		}
		out = Add(out, groupedWeightedSum(w, vals)) // [B, Hq, 1, dv]
	}
	return out
}
