// Package kvcache is lesson 9: one decoding step with a KV cache.
//
// Read README.md, replace the TODO below with your code, then run `mhalab lessons check 9`.
package kvcache

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// DecodeStep is one step of autoregressive decoding with a KV cache: the new token's key and
// value are written into the caches at position pos, and its query attends to the positions
// 0…pos (scale 1/√dk). Positions after pos hold stale values and must get no weight.
//
//	q, newK: [B, h, 1, dk]   newV: [B, h, 1, dv]
//	kCache: [B, h, MaxLen, dk]   vCache: [B, h, MaxLen, dv]
//	pos: int32 scalar, 0 ≤ pos < MaxLen (a graph input: one compiled graph serves every step)
//	→ out: [B, h, 1, dv], and the caches with position pos overwritten.
func DecodeStep(q, newK, newV, kCache, vCache, pos *Node) (out, newKCache, newVCache *Node) {
	// TODO: write newK and newV at pos, then attend with every key after pos masked.
	return ZerosLike(newV), kCache, vCache
}
