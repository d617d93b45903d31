//go:build solution

package merge

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// MergeShards merges softmax attention computed over two disjoint shards of the keys into the
// attention over all of them. For shard s, out_s is its attention output (softmax over its own
// keys only) and lse_s the log-sum-exp of its logits, log Σ_j exp(logit_j) (−∞ when the shard
// has no visible key for that query).
//
// out1, out2: [B, h, Lq, dv]   lse1, lse2: [B, h, Lq]
// → out: [B, h, Lq, dv] (the attention over both shards), lse: [B, h, Lq] (their log-sum-exp).
func MergeShards(out1, lse1, out2, lse2 *Node) (out, lse *Node) {
	m := Max(lse1, lse2)                           // [B, h, Lq]
	m = Where(IsFinite(m), m, ZerosLike(m))        // both shards empty: avoid −∞ − (−∞)
	w1, w2 := Exp(Sub(lse1, m)), Exp(Sub(lse2, m)) // [B, h, Lq], each in [0, 1]
	sum := Add(w1, w2)                             // [B, h, Lq]
	safe := Where(GreaterThan(sum, ZerosLike(sum)), sum, OnesLike(sum))
	num := Add(Mul(out1, InsertAxes(w1, -1)), Mul(out2, InsertAxes(w2, -1))) // [B, h, Lq, dv]
	return Div(num, InsertAxes(safe, -1)), Add(m, Log(sum))
}
