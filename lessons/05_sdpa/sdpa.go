// Package sdpa is lesson 5: scaled dot-product attention, with the right scale.
//
// Read README.md, replace the TODO below with your code, then run `mhalab lessons check 5`.
package sdpa

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// ScaledDotProductAttention computes, for every batch element and head at once,
//
//	weights = softmax(q·kᵀ / √dk)   over the keys
//	out     = weights · v
//
// q: [B, h, Lq, dk]   k: [B, h, Lk, dk]   v: [B, h, Lk, dv]
// → out: [B, h, Lq, dv], weights: [B, h, Lq, Lk].
func ScaledDotProductAttention(q, k, v *Node) (out, weights *Node) {
	// TODO: logits, scale, softmax over the keys, weighted sum of the values.
	return v, q
}
