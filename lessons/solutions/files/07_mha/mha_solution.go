//go:build solution

package mha

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/mhalib"
)

// Weights of one multi-head attention layer, in PyTorch's layout (a weight is [out, in]).
type Weights struct {
	Wq, Wk, Wv *Node // [E, E], [E, kdim], [E, vdim]: q_proj_weight, k_proj_weight, v_proj_weight
	Bq, Bk, Bv *Node // [E] each: in_proj_bias split in three
	Wo         *Node // [E, E]: out_proj.weight
	Bo         *Node // [E]: out_proj.bias
}

// linear is y = x·Wᵀ + b for x [B, L, in], w [out, in], b [out] (lesson 1).
func linear(x, w, b *Node) *Node {
	y := Einsum("bli,oi->blo", x, w)             // [B, L, out]
	return Add(y, ExpandLeftToRank(b, y.Rank())) // + [1, 1, out]
}

// MultiHeadAttention is nn.MultiheadAttention's forward (batch_first=True, no mask, no dropout):
//
//  1. project: q = query·Wqᵀ + Bq, k = key·Wkᵀ + Bk, v = value·Wvᵀ + Bv      → [B, L, E]
//  2. split each into numHeads heads                                         → [B, h, L, E/h]
//  3. scaled dot-product attention in every head                             → [B, h, Lq, E/h]
//  4. merge the heads                                                        → [B, Lq, E]
//  5. project the output: out = merged·Woᵀ + Bo                              → [B, Lq, E]
//
// query: [B, Lq, E]   key: [B, Lk, kdim]   value: [B, Lk, vdim]   →   [B, Lq, E]
//
// Self-attention passes the same node as query, key and value. You may use mhalib.SplitHeads,
// mhalib.MergeHeads and mhalib.ScaledDotProductAttention (you wrote your own in lessons 3 and 5).
func MultiHeadAttention(query, key, value *Node, w Weights, numHeads int) *Node {
	// 1) projections
	q := linear(query, w.Wq, w.Bq) // [B, Lq, E]
	k := linear(key, w.Wk, w.Bk)   // [B, Lk, E]
	v := linear(value, w.Wv, w.Bv) // [B, Lk, E]
	// 2) heads
	q, k, v = mhalib.SplitHeads(q, numHeads), mhalib.SplitHeads(k, numHeads), mhalib.SplitHeads(v, numHeads) // [B, h, L, E/h]
	// 3) attention in every head at once
	heads := mhalib.ScaledDotProductAttention(q, k, v).Done() // [B, h, Lq, E/h]
	// 4) concatenate the heads, 5) output projection
	return linear(mhalib.MergeHeads(heads), w.Wo, w.Bo) // [B, Lq, E]
}
