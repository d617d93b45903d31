// Package decode is a small GPT-style language model built from mhalib's blocks (Decoder) and
// greedy decoding with a KV cache (Session): the smallest model where a cache matters. The
// cache is any mhalib.StepCache — a full mhalib.KVCache, or a mhalib.WindowedKVCache that keeps
// only the last Left+1 positions (each layer then attends over that window).
package decode

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// Decoder is a small GPT-style language model, the smallest model where a KV cache matters:
//
//	tokens [B, L] int32
//	x = wte[tokens] + wpe[positions]                     [B, L, E]   (scopes "wte", "wpe": variable "weight")
//	x = PreLNBlock(x).Causal(CausalTopLeft)  × Layers    [B, L, E]   (scopes "layer_0", "layer_1", …)
//	logits = LayerNorm(x)·wteᵀ                           [B, L, V]   (scope "ln_f"; output weights tied to wte)
//
// Logits computes it for a whole sequence (what decoding without a cache recomputes at every
// step); StepLogits computes it for the next positions only, with the keys and values of the
// earlier ones taken from a cache (mhalib.KVCache or mhalib.WindowedKVCache). Both read the
// same variables.
type Decoder struct {
	Vocab, Embed, Heads, Layers, MaxLen int
}

// check validates the configuration.
func (m Decoder) check() {
	if m.Vocab < 1 || m.Embed < 1 || m.Heads < 1 || m.Layers < 1 || m.MaxLen < 1 || m.Embed%m.Heads != 0 {
		panicArg("Decoder", "%+v: every size must be positive and Heads must divide Embed", m)
	}
}

// embed returns x = wte[tokens] + wpe[positions] [B, n, E] for tokens [B, n] at positions
// [pos, pos+n) (pos a scalar int32 node, or nil for 0), and the token embedding wte [V, E].
func (m Decoder) embed(ctx *context.Context, tokens, pos *Node) (x, wte *Node) {
	g := tokens.Graph()
	if tokens.Rank() != 2 || tokens.DType() != dtypes.Int32 {
		panicArg("tokens", "shape %s: want int32 [batch, length]", tokens.Shape())
	}
	batch, n := tokens.Shape().Dim(0), tokens.Shape().Dim(1)
	if n > m.MaxLen {
		panicArg("tokens", "shape %s: length %d > MaxLen %d", tokens.Shape(), n, m.MaxLen)
	}
	init := func(g *Graph, shape shapes.Shape) *Node { return MulScalar(ctx.RandomNormal(g, shape), 0.02) } // GPT-2's initialisation
	wte = mhalib.Variable(ctx.In("wte"), g, "weight", dtypes.Float32, []int{m.Vocab, m.Embed}, init)        // [V, E]
	wpe := mhalib.Variable(ctx.In("wpe"), g, "weight", dtypes.Float32, []int{m.MaxLen, m.Embed}, init)      // [maxLen, E]
	x = Gather(wte, Reshape(tokens, batch, n, 1))                                                           // [B, n, E]
	positions := Iota(g, shapes.Make(dtypes.Int32, n, 1), 0)                                                // [n, 1]
	if pos != nil {
		positions = Add(positions, BroadcastToDims(Reshape(pos, 1, 1), n, 1))
	}
	p := Gather(wpe, positions)                                                       // [n, E]
	return Add(x, BroadcastToDims(Reshape(p, 1, n, m.Embed), batch, n, m.Embed)), wte // [B, n, E], [V, E]
}

// head returns the logits LayerNorm(x)·wteᵀ for x [B, n, E], wte [V, E]: [B, n, V].
func (m Decoder) head(ctx *context.Context, x, wte *Node) *Node {
	x = mhalib.LayerNorm(ctx.In("ln_f"), x, mhalib.LayerNormEps) // [B, n, E]
	return DotGeneral(x, []int{2}, nil, wte, []int{1}, nil)      // [B, n, V]
}

func layerScope(i int) string { return fmt.Sprintf("layer_%d", i) }

// Logits runs the model over whole sequences: tokens [B, L] int32 → logits [B, L, V].
// Row t depends on tokens 0 … t only (causal), so padding a sequence at the end leaves the
// logits of its real positions unchanged.
func (m Decoder) Logits(ctx *context.Context, tokens *Node) *Node {
	m.check()
	x, wte := m.embed(ctx, tokens, nil) // [B, L, E], [V, E]
	for i := range m.Layers {
		x = mhalib.PreLNBlock(ctx.In(layerScope(i)), x, m.Heads).Causal(mhalib.CausalTopLeft).Done() // [B, L, E]
	}
	return m.head(ctx, x, wte) // [B, L, V]
}

// StepLogits runs the model over the next n positions of sequences whose earlier positions are
// in cache: tokens [B, n] int32 at positions [pos, pos+n) (pos a scalar int32 node, from the
// cache's Advance) → logits [B, n, V]. With a KVCache [B, Heads, MaxLen, Embed/Heads] (NewKVCache)
// they equal rows [pos, pos+n) of Logits over the whole sequences; a WindowedKVCache
// [B, Heads, Left+1, Embed/Heads] makes every layer attend over the last Left+1 positions only
// (the same as Logits while pos+n ≤ Left+1).
func (m Decoder) StepLogits(ctx *context.Context, tokens, pos *Node, cache mhalib.StepCache) *Node {
	m.check()
	x, wte := m.embed(ctx, tokens, pos) // [B, n, E], [V, E]
	for i := range m.Layers {
		lctx := ctx.In(layerScope(i))
		normed := mhalib.LayerNorm(lctx.In("norm"), x, mhalib.LayerNormEps)                            // [B, n, E]
		x = Add(x, mhalib.CachedSelfAttention(lctx, normed, m.Heads, cache, pos).Scope("attn").Done()) // [B, n, E]
	}
	return m.head(ctx, x, wte) // [B, n, V]
}

// NewKVCache returns a full cache for batch sequences of this model:
// keys and values [batch, Heads, MaxLen, Embed/Heads].
func (m Decoder) NewKVCache(batch int) (*mhalib.KVCache, error) {
	dk := m.Embed / max(m.Heads, 1)
	return mhalib.NewKVCache(batch, m.Heads, m.MaxLen, dk, dk)
}

// NewWindowedKVCache returns a ring of the last left+1 positions for batch sequences of this
// model: keys and values [batch, Heads, left+1, Embed/Heads]. StepLogits then attends over that
// window, and sequences may run past MaxLen only if the positions stay below MaxLen (the
// position table has MaxLen rows).
func (m Decoder) NewWindowedKVCache(batch, left int) (*mhalib.WindowedKVCache, error) {
	dk := m.Embed / max(m.Heads, 1)
	return mhalib.NewWindowedKVCache(batch, m.Heads, left, dk, dk)
}

// panicArg panics with an *mhalib.ArgumentError, as mhalib's graph-building functions do.
func panicArg(arg, format string, args ...any) {
	panic(&mhalib.ArgumentError{Arg: arg, Msg: fmt.Sprintf(format, args...)})
}
