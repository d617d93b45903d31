package induction

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/decode"
)

// The rotary model (Config.RoPE): decode.Decoder's sizes and layout without the position table.
// Positions enter only through RoPE (mhalib.RoPE) on the queries and keys, so a head can prefer
// "the key one position back" (what a previous-token head needs) but cannot tell where in the
// sequence it is — which leaves matching tokens as the only way to find a copy at a varying
// distance:
//
//	x = wte[tokens]                                             [B, L, E]   (scope "wte")
//	per layer i (scope "layer_i", attention only, no MLP):
//	  h = LayerNorm(x)                                          [B, L, E]   ("norm")
//	  q, k, v = h·W_qᵀ + b_q, h·W_kᵀ + b_k, h·W_vᵀ + b_v        [B, H, L, dk] after SplitHeads ("attn/q_proj" …)
//	  q, k = RoPE(q), RoPE(k)
//	  x = x + MergeHeads(softmax(q·kᵀ/√dk + causal)·v)·W_oᵀ + b_o               ("attn/out_proj")
//	logits = LayerNorm(x)·wteᵀ                                  [B, L, V]   ("ln_f"; tied to wte)

// ropeForward computes the rotary model: tokens [B, L] int32 → logits [B, L, V], then one
// attention-weights tensor [B, H, L, L] per layer.
func ropeForward(ctx *context.Context, m decode.Decoder, rotaryDims int, tokens *Node) []*Node {
	g := tokens.Graph()
	batch, n := tokens.Shape().Dim(0), tokens.Shape().Dim(1)
	init := func(g *Graph, shape shapes.Shape) *Node { // GPT-2's N(0, 0.02²)
		return MulScalar(ctx.RandomNormal(g, shape), 0.02)
	}
	wte := ctx.Checked(false).In("wte").WithInitializer(init).
		VariableWithShape("weight", shapes.Make(dtypes.Float32, m.Vocab, m.Embed)).ValueGraph(g) // [V, E]
	x := Gather(wte, Reshape(tokens, batch, n, 1)) // [B, L, E]
	outs := []*Node{nil}
	for i := range m.Layers {
		lctx := ctx.In(layerName(i))
		h := mhalib.LayerNorm(lctx.In("norm"), x, mhalib.LayerNormEps) // [B, L, E]
		actx := lctx.In("attn")
		q := mhalib.RoPE(mhalib.SplitHeads(mhalib.Linear(actx.In("q_proj"), h, m.Embed, true), m.Heads)).RotaryDims(rotaryDims).Done() // [B, H, L, dk]
		k := mhalib.RoPE(mhalib.SplitHeads(mhalib.Linear(actx.In("k_proj"), h, m.Embed, true), m.Heads)).RotaryDims(rotaryDims).Done() // [B, H, L, dk]
		v := mhalib.SplitHeads(mhalib.Linear(actx.In("v_proj"), h, m.Embed, true), m.Heads)                                            // [B, H, L, dk]
		o, w := mhalib.ScaledDotProductAttention(q, k, v).Causal(mhalib.CausalTopLeft).DoneWithWeights()                               // [B, H, L, dk], [B, H, L, L]
		x = Add(x, mhalib.Linear(actx.In("out_proj"), mhalib.MergeHeads(o), m.Embed, true))                                            // [B, L, E]
		outs = append(outs, w)
	}
	x = mhalib.LayerNorm(ctx.In("ln_f"), x, mhalib.LayerNormEps) // [B, L, E]
	outs[0] = DotGeneral(x, []int{2}, nil, wte, []int{1}, nil)   // [B, L, V]
	return outs
}

// ropeNames lists the variables of the rotary model, by file name.
func ropeNames(m decode.Decoder) []string {
	names := []string{"wte/weight", "ln_f/weight", "ln_f/bias"}
	for i := range m.Layers {
		names = append(names, layerName(i)+"/norm/weight", layerName(i)+"/norm/bias")
		for _, p := range []string{"q_proj", "k_proj", "v_proj", "out_proj"} {
			names = append(names, layerName(i)+"/attn/"+p+"/weight", layerName(i)+"/attn/"+p+"/bias")
		}
	}
	return names
}
