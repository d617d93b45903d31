//go:build solution

package window

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// SlidingWindowAttention is scaled dot-product attention (scale 1/√dk) where query i sees only
// the keys i − window … i (causal, aligned top-left; keys before 0 do not exist).
//
// q: [B, h, L, dk]   k: [B, h, L, dk]   v: [B, h, L, dv]
// → out: [B, h, L, dv], weights: [B, h, L, L].
func SlidingWindowAttention(q, k, v *Node, window int) (out, weights *Node) {
	g := q.Graph()
	B, h, L, dk := q.Shape().Dim(0), q.Shape().Dim(1), q.Shape().Dim(2), q.Shape().Dim(3)
	logits := MulScalar(Einsum("bhqd,bhkd->bhqk", q, k), 1/math.Sqrt(float64(dk))) // [B, h, L, L]
	i := Iota(g, shapes.Make(dtypes.Int32, L, L), 0)                               // query index
	j := Iota(g, shapes.Make(dtypes.Int32, L, L), 1)                               // key index
	inside := LogicalAnd(LessOrEqual(j, i), GreaterOrEqual(j, AddScalar(i, float64(-window))))
	inside = BroadcastToDims(Reshape(inside, 1, 1, L, L), B, h, L, L)
	negInf := BroadcastToDims(Scalar(g, logits.DType(), math.Inf(-1)), B, h, L, L)
	weights = Softmax(Where(inside, logits, negInf), -1) // every row keeps at least key i
	return Einsum("bhqk,bhkd->bhqd", weights, v), weights
}
