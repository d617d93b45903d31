package minilm

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// L2Eps is the smallest norm NormalizeL2 divides by (torch.nn.functional.normalize's eps).
const L2Eps = 1e-12

// encode runs the embeddings and every layer. ids: [B, L] int32, valid: [B, L] bool (false
// on padding) → hidden: the embeddings' output then every layer's, each [B, L, E] (1 +
// layers entries); weights: every layer's attention weights [B, h, L, L] when withWeights.
//
// heads, when not nil, is given every layer's heads' outputs z [B, h, L, dk] before the output
// projection and returns what the layer uses instead (probe.go).
func encode(ctx *context.Context, c Config, ids, valid *Node, withWeights bool, heads func(layer int, z *Node) *Node) (hidden, weights []*Node) {
	x := embeddings(ctx, c, ids) // [B, L, E]
	hidden = append(hidden, x)
	for n := range c.NumHiddenLayers {
		var w *Node
		var hook func(z *Node) *Node
		if heads != nil {
			hook = func(z *Node) *Node { return heads(n, z) }
		}
		x, w = encoderLayer(layerCtx(ctx, n), c, x, valid, withWeights, hook) // [B, L, E], [B, h, L, L]
		hidden = append(hidden, x)
		if withWeights {
			weights = append(weights, w)
		}
	}
	return hidden, weights
}

// MeanPooling averages x over the valid positions: x: [B, L, E], valid: [B, L] bool → [B, E].
// A row without valid positions gives zeros (its count is clamped to 1e-9, as
// sentence-transformers clamps it).
func MeanPooling(x, valid *Node) *Node {
	B, L := valid.Shape().Dim(0), valid.Shape().Dim(1)
	m := ConvertDType(Reshape(valid, B, L, 1), x.DType())             // [B, L, 1]
	sum := ReduceSum(Mul(x, m), 1)                                    // [B, E]
	count := Max(ReduceSum(m, 1), Scalar(x.Graph(), x.DType(), 1e-9)) // [B, 1]
	return Div(sum, count)                                            // [B, E]
}

// NormalizeL2 divides each row by its Euclidean norm (at least L2Eps): x: [B, E] → [B, E].
func NormalizeL2(x *Node) *Node {
	norm := Sqrt(ReduceAndKeep(Square(x), ReduceSum, -1))         // [B, 1]
	return Div(x, Max(norm, Scalar(x.Graph(), x.DType(), L2Eps))) // [B, E]
}
