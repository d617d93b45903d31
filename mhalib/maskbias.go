package mhalib

import (
	"math"

	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// blockAsBias applies the "may attend" tile allowed [B|1, h|1, rows, cols] to logits
// [B, h, rows, cols] as an additive bias of 0 and −inf, for the pure-Go backend: Where
// broadcasts its condition only as a prefix, so there it takes a bool broadcast to the whole
// [B, h, rows, cols] and a pass of Where; Add broadcasts the size-1 axes of the small bias
// itself. The values are the same bit for bit (x + 0 = x, x + (−inf) = −inf for finite x), so
// only with the fill value −inf (maskSet.apply checks); the gradient differs only at blocked
// pairs, whose weights and so gradients are 0.
func blockAsBias(logits, allowed *Node) *Node {
	g := logits.Graph()
	zero, negInf := ScalarZero(g, logits.DType()), Scalar(g, logits.DType(), math.Inf(-1))
	bias := Where(allowed, zero, negInf) // [B|1, h|1, rows, cols]: the backend broadcasts the scalars (a broadcast node would be computed up front, see maskSet.token)
	return Add(logits, bias)             // [B, h, rows, cols]
}
