// Package gqa is lesson 11: grouped-query attention, without copying the keys and values.
//
// Read README.md, replace the TODO below with your code, then run `mhalab lessons check 11`.
package gqa

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// GroupedQueryAttention computes scaled dot-product attention (scale 1/√dk, no mask) where the
// Hq query heads share Hkv key/value heads: query head h uses key/value head h / (Hq/Hkv).
//
// q: [B, Hq, Lq, dk]   k: [B, Hkv, Lk, dk]   v: [B, Hkv, Lk, dv]   (Hq a multiple of Hkv)
// → out: [B, Hq, Lq, dv], weights: [B, Hq, Lq, Lk].
//
// Do not repeat k or v Hq/Hkv times: no node of your graph may hold Hq heads of keys or values.
func GroupedQueryAttention(q, k, v *Node) (out, weights *Node) {
	// TODO: view the G = Hq/Hkv query heads of a group as G·Lq rows against the group's key head.
	return q, q
}
