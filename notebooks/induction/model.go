package induction

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/decode"
)

// The model is decode.Decoder: token and position embeddings, Layers pre-LN causal attention
// blocks (attention only, no MLP, as in Olsson et al.'s small models), tied output layer.

// ForwardWithWeights computes what Decoder.Logits computes, from the same variables, and also
// returns every layer's attention weights: tokens [B, L] → logits [B, L, V] followed by one
// [B, H, L, L] per layer. The variables must exist (created by Decoder.Logits or training).
func ForwardWithWeights(ctx *context.Context, m decode.Decoder, tokens *Node) []*Node {
	g := tokens.Graph()
	batch, n := tokens.Shape().Dim(0), tokens.Shape().Dim(1)
	free := ctx.Checked(false)
	wte := free.In("wte").VariableWithShape("weight", shapes.Make(dtypes.Float32, m.Vocab, m.Embed)).ValueGraph(g)
	wpe := free.In("wpe").VariableWithShape("weight", shapes.Make(dtypes.Float32, m.MaxLen, m.Embed)).ValueGraph(g)
	x := Gather(wte, Reshape(tokens, batch, n, 1))                            // [B, L, E]
	p := Gather(wpe, Iota(g, shapes.Make(dtypes.Int32, n, 1), 0))             // [L, E]
	x = Add(x, BroadcastToDims(Reshape(p, 1, n, m.Embed), batch, n, m.Embed)) // [B, L, E]
	outs := []*Node{nil}
	for i := range m.Layers {
		lctx := ctx.In(layerName(i))
		normed := mhalib.LayerNorm(lctx.In("norm"), x, mhalib.LayerNormEps) // [B, L, E]
		attn, w := mhalib.MultiHeadAttention(lctx, normed, normed, normed, m.Heads).Scope("attn").
			Causal(mhalib.CausalTopLeft).DoneWithWeights() // [B, L, E], [B, H, L, L]
		x = Add(x, attn)
		outs = append(outs, w)
	}
	x = mhalib.LayerNorm(ctx.In("ln_f"), x, mhalib.LayerNormEps) // [B, L, E]
	outs[0] = DotGeneral(x, []int{2}, nil, wte, []int{1}, nil)   // [B, L, V]
	return outs
}

// layerName is the scope of layer i in decode.Decoder.
func layerName(i int) string { return fmt.Sprintf("layer_%d", i) }

// CopyLoss is the mean cross-entropy of the next token over the masked positions.
// labels: targets [B, L] int32, mask [B, L] float32; predictions: logits [B, L, V].
func CopyLoss(labels, predictions []*Node) *Node {
	targets, mask, logits := labels[0], labels[1], predictions[0]
	logp := LogSoftmax(logits, -1)                                                            // [B, L, V]
	picked := ReduceSum(Mul(OneHot(targets, logits.Shape().Dim(-1), logp.DType()), logp), -1) // [B, L]
	total := ReduceAllSum(Mul(picked, mask))
	return Neg(Div(total, Max(ReduceAllSum(mask), ScalarOne(logits.Graph(), mask.DType()))))
}
