package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// LayerNormEps is the epsilon of LayerNorm (PyTorch's default).
const LayerNormEps = 1e-5

// LayerNorm normalises x over its last axis, as torch.nn.LayerNorm(E):
//
//	y = (x − mean) / √(var + eps) · weight + bias      (biased variance)
//
// x: [..., E] → [..., E]; variables "weight" (ones) and "bias" (zeros), [E], in ctx's scope.
func LayerNorm(ctx *context.Context, x *Node, eps float64) *Node {
	if x.Rank() < 1 || !x.DType().IsFloat() {
		panicArg("x", "shape %s: LayerNorm wants a float tensor [..., E]", x.Shape())
	}
	g := x.Graph()
	E := x.Shape().Dim(-1)
	ones := func(g *Graph, s shapes.Shape) *Node { return Ones(g, s) }
	weight := variable(ctx, g, "weight", x.DType(), []int{E}, ones) // [E]
	bias := variable(ctx, g, "bias", x.DType(), []int{E}, zeroInit) // [E]

	mean := ReduceAndKeep(x, ReduceMean, -1)                    // [..., 1]
	centered := Sub(x, mean)                                    // [..., E]
	variance := ReduceAndKeep(Square(centered), ReduceMean, -1) // [..., 1]
	// Div by Sqrt rather than Mul by Rsqrt: GoMLX v0.26 has no gradient for Rsqrt.
	y := Div(centered, Sqrt(AddScalar(variance, eps))) // [..., E]
	y = Mul(y, ExpandLeftToRank(weight, y.Rank()))     // [..., E]
	return Add(y, ExpandLeftToRank(bias, y.Rank()))    // [..., E]
}

// BlockBuilder configures PreLNBlock; finish it with Done. Its attention options are
// AttentionOptions' (the same as MultiHeadAttention's: masks, Causal, Dropout, Window, …),
// passed to the block's attention; ConfigureAttention reaches the others.
type BlockBuilder struct {
	AttentionOptions[*BlockBuilder]
	ctx       *context.Context
	x         *Node
	numHeads  int
	configure func(b *MHABuilder)
}

// PreLNBlock starts building a pre-LayerNorm residual self-attention block:
//
//	y = x + Dropout(MHA(LN(x), LN(x), LN(x)))
//
// x: [B, L, E] → y: [B, L, E]. LayerNorm lives in scope "norm" (weight, bias, eps 1e-5),
// the attention in scope "attn" (PyTorch names: attn.in_proj_weight, ...). Dropout(ctx, rate)
// drops the attention weights and the attention output before the residual sum.
func PreLNBlock(ctx *context.Context, x *Node, numHeads int) *BlockBuilder {
	b := &BlockBuilder{ctx: ctx, x: x, numHeads: numHeads}
	b.AttentionOptions = newAttentionOptions(b)
	return b
}

// ConfigureAttention lets the caller set further options of the block's MultiHeadAttention
// (head sizes, formulation, ...). Default: none.
func (b *BlockBuilder) ConfigureAttention(fn func(m *MHABuilder)) *BlockBuilder {
	b.configure = fn
	return b
}

// Done builds the block and returns y [B, L, E].
func (b *BlockBuilder) Done() *Node {
	if b.ctx == nil {
		panicArg("ctx", "is nil")
	}
	if b.x == nil || b.x.Rank() != 3 {
		shape := "nil"
		if b.x != nil {
			shape = b.x.Shape().String()
		}
		panicArg("x", "shape %s: PreLNBlock wants [batch, length, embedDim]", shape)
	}
	normed := LayerNorm(b.ctx.In("norm"), b.x, LayerNormEps) // [B, L, E]
	mha := MultiHeadAttention(b.ctx, normed, normed, normed, b.numHeads).Scope("attn")
	mha.cfg = b.cfg // the block's attention options, validated by the attention
	if b.configure != nil {
		b.configure(mha)
	}
	attn := mha.Done()               // [B, L, E]
	attn = b.cfg.dropout.apply(attn) // [B, L, E], training only
	return Add(b.x, attn)            // [B, L, E]
}
