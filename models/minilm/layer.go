package minilm

import (
	"strconv"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/layers/activations"
	"github.com/mhalab/mhalab/mhalib"
)

// attentionScope is the scope of a layer's MultiHeadAttention, under encoder/layer/N.
const attentionScope = "attention"

// layerCtx is the scope of encoder layer n: encoder/layer/n (the checkpoint's names).
func layerCtx(ctx *context.Context, n int) *context.Context {
	return ctx.In("encoder").In("layer").In(strconv.Itoa(n))
}

// geluTanhMutant is a HiddenAct that only tests set (ReadConfig refuses it): the tanh
// approximation of GELU, to show that the parity tolerance notices the difference.
const geluTanhMutant = "gelu_tanh_test_mutant"

// encoderLayer is one post-LN BERT layer:
//
//	a = MHA(x, x, x)                 keys masked where valid is false (padding)
//	x = LayerNorm(x + a)             attention/output/LayerNorm
//	f = W₂·GELU(W₁·x + b₁) + b₂      intermediate/dense [I, E], output/dense [E, I]
//	y = LayerNorm(x + f)             output/LayerNorm
//
// x: [B, L, E], valid: [B, L] bool → y: [B, L, E] and, when withWeights, the attention
// weights [B, h, L, L] (nil otherwise). Dropout is off (inference).
//
// With heads (not nil) the attention is computed head by head in the open (probeAttention) and
// heads(z [B, h, L, dk]) may read or replace the heads' outputs before the output projection.
func encoderLayer(ctx *context.Context, c Config, x, valid *Node, withWeights bool, heads func(z *Node) *Node) (y, weights *Node) {
	var a *Node
	switch {
	case heads != nil:
		a, weights = probeAttention(ctx.In(attentionScope), c, x, valid, heads) // [B, L, E], [B, h, L, L]
	case withWeights:
		a, weights = mhaOf(ctx, c, x, valid).DoneWithWeights() // [B, L, E], [B, h, L, L]
	default:
		a = mhaOf(ctx, c, x, valid).Done() // [B, L, E]
	}
	x = mhalib.LayerNorm(ctx.In(attentionScope).In("output").In("LayerNorm"), Add(x, a), c.LayerNormEps) // [B, L, E]

	f := mhalib.Linear(ctx.In("intermediate").In("dense"), x, c.IntermediateSize, true) // [B, L, I]
	if c.HiddenAct == geluTanhMutant {
		f = activations.GeluApproximate(f) // [B, L, I]: only TestParityCatchesBugs asks for it
	} else {
		f = activations.Gelu(f) // [B, L, I], exact (erf)
	}
	f = mhalib.Linear(ctx.In("output").In("dense"), f, c.HiddenSize, true)            // [B, L, E]
	y = mhalib.LayerNorm(ctx.In("output").In("LayerNorm"), Add(x, f), c.LayerNormEps) // [B, L, E]
	return y, weights
}

// mhaOf is the layer's self-attention, keys masked where valid is false: x [B, L, E].
func mhaOf(ctx *context.Context, c Config, x, valid *Node) *mhalib.MHABuilder {
	return mhalib.MultiHeadAttention(ctx, x, x, x, c.NumAttentionHeads).Scope(attentionScope).
		KeyPaddingMask(mhalib.MaskAttendWhereTrue(valid))
}
