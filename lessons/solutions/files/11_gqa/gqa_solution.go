//go:build solution

package gqa

import (
	"math"

	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// GroupedQueryAttention computes scaled dot-product attention (scale 1/√dk, no mask) where the
// Hq query heads share Hkv key/value heads: query head h uses key/value head h / (Hq/Hkv).
//
// q: [B, Hq, Lq, dk]   k: [B, Hkv, Lk, dk]   v: [B, Hkv, Lk, dv]   (Hq a multiple of Hkv)
// → out: [B, Hq, Lq, dv], weights: [B, Hq, Lq, Lk].
func GroupedQueryAttention(q, k, v *Node) (out, weights *Node) {
	B, Hq, Lq, dk := q.Shape().Dim(0), q.Shape().Dim(1), q.Shape().Dim(2), q.Shape().Dim(3)
	Hkv, Lk, dv := k.Shape().Dim(1), k.Shape().Dim(2), v.Shape().Dim(3)
	G := Hq / Hkv
	// The G query heads of a group are consecutive: q is already [B, Hkv, G·Lq, dk] in memory.
	qg := Reshape(q, B, Hkv, G*Lq, dk)                            // [B, Hkv, G·Lq, dk]
	logits := Einsum("bhqd,bhkd->bhqk", qg, k)                    // [B, Hkv, G·Lq, Lk]
	logits = MulScalar(logits, 1/math.Sqrt(float64(dk)))          // scale by 1/√dk
	w := Softmax(logits, -1)                                      // over the keys
	out = Reshape(Einsum("bhqk,bhkd->bhqd", w, v), B, Hq, Lq, dv) // [B, Hq, Lq, dv]
	return out, Reshape(w, B, Hq, Lq, Lk)                         // [B, Hq, Lq, Lk]
}
