package parallel

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified

	"github.com/mhalab/mhalab/mhalib"
)

// ShardAttention is one device's part of sequence-parallel attention: softmax attention of all
// queries over this device's shard of the keys and values only,
//
//	q [B, h, Lq, dk], k [B, h, Lk_d, dk], v [B, h, Lk_d, dv] → out_d [B, h, Lq, dv], lse_d [B, h, Lq]
//
// out_d = softmax(s)·v over the shard's logits s = q·kᵀ·scale and lse_d = log Σ_j exp(s_j), the
// log-sum-exp of those logits. With causal, key j of the shard sits at position offset + j of
// the whole sequence and query i at position i (top-left alignment): key positions above i are
// blocked. offset is a scalar int32 node (each device gets its own). A row whose keys are all
// blocked has out_d = 0 and lse_d = −inf, so that it weighs nothing in MergeShards.
func ShardAttention(q, k, v *Node, scale float64, causal bool, offset *Node) (out, lse *Node) {
	if q == nil || k == nil || v == nil || q.Rank() != 4 || k.Rank() != 4 || v.Rank() != 4 {
		panic(&mhalib.ArgumentError{Arg: "q, k, v", Msg: "ShardAttention wants [batch, heads, length, dim] each"})
	}
	dtype := q.DType()
	lq, lk := q.Shape().Dim(2), k.Shape().Dim(2)
	logits := MulScalar(Einsum("bhqd,bhkd->bhqk", q, k), scale) // [B, h, Lq, Lk_d]
	if causal {
		if offset == nil {
			panic(&mhalib.ArgumentError{Arg: "offset", Msg: "causal ShardAttention needs the shard's first key position"})
		}
		g := q.Graph()
		qPos := Iota(g, shapesOf(dtypes.Int32, lq, 1), 0)                                          // [Lq, 1]
		kPos := Add(Iota(g, shapesOf(dtypes.Int32, 1, lk), 1), ConvertDType(offset, dtypes.Int32)) // [1, Lk_d]
		blocked := Reshape(GreaterThan(kPos, qPos), 1, 1, lq, lk)                                  // [1, 1, Lq, Lk_d]
		blocked = BroadcastToDims(blocked, logits.Shape().Dimensions...)                           // [B, h, Lq, Lk_d]
		logits = Where(blocked, Infinity(g, dtype, -1), logits)
	}
	m := StopGradient(ReduceAndKeep(logits, ReduceMax, -1)) // [B, h, Lq, 1], −inf for a blocked row
	m = Where(IsFinite(m), m, ZerosLike(m))                 // a blocked row: exp(−inf − 0) = 0
	p := Exp(Sub(logits, m))                                // [B, h, Lq, Lk_d]
	l := ReduceAndKeep(p, ReduceSum, -1)                    // [B, h, Lq, 1]
	safeL := Where(GreaterThan(l, ZerosLike(l)), l, OnesLike(l))
	out = Div(Einsum("bhqk,bhkd->bhqd", p, v), safeL) // [B, h, Lq, dv]
	lse = Squeeze(Add(m, Log(l)), -1)                 // [B, h, Lq]
	return out, lse
}

// MergeShards merges every device's (out_d, lse_d) of ShardAttention into the attention over
// all keys, the same on every device:
//
//	m = max_d lse_d,  w_d = exp(lse_d − m),  out = Σ_d w_d·out_d / Σ_d w_d       [B, h, Lq, dv]
//
// with one all-reduce (max of m) and one all-reduce (sum of [w·out | w], one message). m only
// keeps the exponentials in range: the result does not depend on it. A row with no visible key
// anywhere comes out 0.
func MergeShards(out, lse *Node) *Node {
	merged, _, _ := mergeShards(out, lse)
	return merged
}

// mergeShards is MergeShards, also returning the partial [w·out | w] and its all-reduced sum.
func mergeShards(out, lse *Node) (merged, partial, reduced *Node) {
	dv := out.Shape().Dim(-1)
	lse = InsertAxes(lse, -1)                          // [B, h, Lq, 1]
	m := StopGradient(AllReduceMax(lse))               // [B, h, Lq, 1]
	m = Where(IsFinite(m), m, ZerosLike(m))            // no key anywhere: every w_d = 0
	w := Exp(Sub(lse, m))                              // [B, h, Lq, 1]
	partial = Concatenate([]*Node{Mul(out, w), w}, -1) // [B, h, Lq, dv+1]
	reduced = AllReduceSum(partial)                    // [B, h, Lq, dv+1]
	num := Slice(reduced, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, dv))
	den := Slice(reduced, AxisRange(), AxisRange(), AxisRange(), AxisRange(dv))
	den = Where(GreaterThan(den, ZerosLike(den)), den, OnesLike(den))
	return Div(num, den), partial, reduced
}

// SequenceParallelGradients is ShardAttention followed by MergeShards, and the gradients of
// ⟨out, dOut⟩ for a cotangent dOut [B, h, Lq, dv] (the same on every device): Dq is
// all-reduced (every device holds all queries), Dk and Dv are this device's shards.
func SequenceParallelGradients(q, k, v *Node, scale float64, causal bool, offset, dOut *Node) (out, dq, dk, dv *Node) {
	o, lse := ShardAttention(q, k, v, scale, causal, offset)
	out, partial, reduced := mergeShards(o, lse)
	d := vjpOfPartials(out, dOut, []*Node{partial}, []*Node{reduced}, q, k, v)
	return out, AllReduceSum(d[0]), d[1], d[2]
}

// MergeTwo merges two shards' partial attentions exactly, on one device, without collectives:
// (out1, lse1) over keys K1 and (out2, lse2) over keys K2 give the attention over K1 ∪ K2.
//
//	out1, out2 [..., dv], lse1, lse2 [...] → out [..., dv], lse [...]
//
// It is the rule of MergeShards (and of flash attention's online softmax) for two blocks.
func MergeTwo(out1, lse1, out2, lse2 *Node) (out, lse *Node) {
	m := Max(lse1, lse2)
	m = StopGradient(Where(IsFinite(m), m, ZerosLike(m))) // [...]
	w1, w2 := Exp(Sub(lse1, m)), Exp(Sub(lse2, m))        // [...]
	sum := Add(w1, w2)                                    // [...]
	safe := Where(GreaterThan(sum, ZerosLike(sum)), sum, OnesLike(sum))
	num := Add(Mul(out1, InsertAxes(w1, -1)), Mul(out2, InsertAxes(w2, -1))) // [..., dv]
	return Div(num, InsertAxes(safe, -1)), Add(m, Log(sum))
}

// DefaultScale is 1/√dk, the scale of the logits for heads of dk features.
func DefaultScale(dk int) float64 { return 1 / math.Sqrt(float64(dk)) }
