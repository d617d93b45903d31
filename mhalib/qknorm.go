package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// QK-norm: an RMSNorm of every query and key head vector, before RoPE, as Qwen 3 and OLMo 2 do
// (OLMo 2 normalises the whole projected q and k; Qwen 3 and Gemma 3 each head, as here).
// Normalised q and k keep the logits q·k bounded by |w_q|·|w_k|·dk·scale, which keeps the
// softmax from saturating early in training.
//
//	RMSNorm(x) = x / √(mean(x²) + eps) ⊙ weight        over the last axis (headDim)

// DefaultRMSNormEps is the eps of Qwen 3 and Llama 3 (rms_norm_eps = 1e-6; SmolLM2 uses 1e-5).
const DefaultRMSNormEps = 1e-6

// RMSNorm normalises the last axis of x: x [..., d], weight [d] (nil: no weight) → [..., d].
func RMSNorm(x, weight *Node, eps float64) *Node {
	if x == nil || x.Rank() < 1 || !x.DType().IsFloat() {
		panicArg("x", "RMSNorm wants a float tensor [..., d]")
	}
	d := x.Shape().Dim(-1)
	if weight != nil && (weight.Rank() != 1 || weight.Shape().Dim(0) != d || weight.DType() != x.DType()) {
		panicArg("weight", "shape %s: want [%d] of x's dtype for x shape %s", weight.Shape(), d, x.Shape())
	}
	ms := ReduceAndKeep(Square(x), ReduceMean, -1) // [..., 1]
	y := Div(x, Sqrt(AddScalar(ms, eps)))          // [..., d] (Rsqrt has no gradient in GoMLX v0.26)
	if weight != nil {
		y = Mul(y, ExpandLeftToRank(weight, y.Rank())) // [..., d]
	}
	return y
}

// QKNorm applies RMSNorm to each head of q [B, Hq, Lq, dk] and k [B, Hkv, Lk, dk], with the
// learned weights "q_norm/weight" and "k_norm/weight" [dk] in ctx's scope (initialised to ones;
// Hugging Face's names are q_norm.weight and k_norm.weight).
func QKNorm(ctx *context.Context, q, k *Node, eps float64) (qn, kn *Node) {
	if q == nil || k == nil || q.Rank() != 4 || k.Rank() != 4 || q.Shape().Dim(3) != k.Shape().Dim(3) || q.DType() != k.DType() {
		panicArg("q/k", "QKNorm wants q [B, Hq, Lq, dk] and k [B, Hkv, Lk, dk] of one dtype, got q %v, k %v", shapeOf(q), shapeOf(k))
	}
	g, dk := q.Graph(), q.Shape().Dim(3)
	wq := variable(ctx.In("q_norm"), g, "weight", q.DType(), []int{dk}, onesInit) // [dk]
	wk := variable(ctx.In("k_norm"), g, "weight", k.DType(), []int{dk}, onesInit) // [dk]
	return RMSNorm(q, wq, eps), RMSNorm(k, wk, eps)
}

// shapeOf prints a node's shape, or "nil".
func shapeOf(x *Node) any {
	if x == nil {
		return "nil"
	}
	return x.Shape()
}

// onesInit initialises with ones (a norm's weight).
func onesInit(g *Graph, shape shapes.Shape) *Node { return Ones(g, shape) }
