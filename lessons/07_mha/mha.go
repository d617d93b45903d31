// Package mha is lesson 7: assembling multi-head attention from the pieces of lessons 1 to 5, for
// self-attention and cross-attention.
//
// Read README.md, replace the TODO below with your code, then run `mhalab lessons check 7`.
package mha

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// Weights of one multi-head attention layer, in PyTorch's layout (a weight is [out, in]).
type Weights struct {
	Wq, Wk, Wv *Node // [E, E], [E, kdim], [E, vdim]: q_proj_weight, k_proj_weight, v_proj_weight
	Bq, Bk, Bv *Node // [E] each: in_proj_bias split in three
	Wo         *Node // [E, E]: out_proj.weight
	Bo         *Node // [E]: out_proj.bias
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
	// TODO: the five steps above.
	return query
}
