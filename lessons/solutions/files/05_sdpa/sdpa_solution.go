//go:build solution

package sdpa

import (
	"math"

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
	dk := q.Shape().Dim(-1)
	logits := Einsum("bhqd,bhkd->bhqk", q, k)            // [B, h, Lq, Lk]
	logits = MulScalar(logits, 1/math.Sqrt(float64(dk))) // scale by 1/√dk
	weights = Softmax(logits, -1)                        // over the keys; subtracts the row max
	out = Einsum("bhqk,bhkd->bhqd", weights, v)          // [B, h, Lq, dv]
	return out, weights
}
