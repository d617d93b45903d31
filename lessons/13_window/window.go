// Package window is lesson 13: causal sliding-window (local) attention.
//
// Read README.md, replace the TODO below with your code, then run `mhalab lessons check 13`.
package window

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// SlidingWindowAttention is scaled dot-product attention (scale 1/√dk) where query i sees only
// the keys i − window … i (causal, aligned top-left; keys before 0 do not exist).
//
// q: [B, h, L, dk]   k: [B, h, L, dk]   v: [B, h, L, dv]
// → out: [B, h, L, dv], weights: [B, h, L, L].
func SlidingWindowAttention(q, k, v *Node, window int) (out, weights *Node) {
	// TODO: the logits, a mask that keeps i − window ≤ j ≤ i, the softmax, the weighted sum.
	return v, q
}
