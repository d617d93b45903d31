package mhalib

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
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
// earlier ones taken from a KVCache. Both read the same variables.
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
	init := normalInit(ctx, 0.02)                                                               // GPT-2's initialisation
	wte = variable(ctx.In("wte"), g, "weight", dtypes.Float32, []int{m.Vocab, m.Embed}, init)   // [V, E]
	wpe := variable(ctx.In("wpe"), g, "weight", dtypes.Float32, []int{m.MaxLen, m.Embed}, init) // [maxLen, E]
	x = Gather(wte, Reshape(tokens, batch, n, 1))                                               // [B, n, E]
	positions := Iota(g, shapes.Make(dtypes.Int32, n, 1), 0)                                    // [n, 1]
	if pos != nil {
		positions = Add(positions, BroadcastToDims(Reshape(pos, 1, 1), n, 1))
	}
	p := Gather(wpe, positions)                                                       // [n, E]
	return Add(x, BroadcastToDims(Reshape(p, 1, n, m.Embed), batch, n, m.Embed)), wte // [B, n, E], [V, E]
}

// head returns the logits LayerNorm(x)·wteᵀ for x [B, n, E], wte [V, E]: [B, n, V].
func (m Decoder) head(ctx *context.Context, x, wte *Node) *Node {
	x = LayerNorm(ctx.In("ln_f"), x, LayerNormEps)          // [B, n, E]
	return DotGeneral(x, []int{2}, nil, wte, []int{1}, nil) // [B, n, V]
}

func layerScope(i int) string { return fmt.Sprintf("layer_%d", i) }

// Logits runs the model over whole sequences: tokens [B, L] int32 → logits [B, L, V].
// Row t depends on tokens 0 … t only (causal), so padding a sequence at the end leaves the
// logits of its real positions unchanged.
func (m Decoder) Logits(ctx *context.Context, tokens *Node) *Node {
	m.check()
	x, wte := m.embed(ctx, tokens, nil) // [B, L, E], [V, E]
	for i := range m.Layers {
		x = PreLNBlock(ctx.In(layerScope(i)), x, m.Heads).Causal(CausalTopLeft).Done() // [B, L, E]
	}
	return m.head(ctx, x, wte) // [B, L, V]
}

// StepLogits runs the model over the next n positions of sequences whose earlier positions are
// in cache: tokens [B, n] int32 at positions [pos, pos+n) (pos a scalar int32 node, from
// KVCache.Advance) → logits [B, n, V], equal to rows [pos, pos+n) of Logits over the whole
// sequences. The cache must be [B, Heads, MaxLen, Embed/Heads].
func (m Decoder) StepLogits(ctx *context.Context, tokens, pos *Node, cache *KVCache) *Node {
	m.check()
	x, wte := m.embed(ctx, tokens, pos) // [B, n, E], [V, E]
	for i := range m.Layers {
		lctx := ctx.In(layerScope(i))
		normed := LayerNorm(lctx.In("norm"), x, LayerNormEps)                                   // [B, n, E]
		x = Add(x, CachedSelfAttention(lctx, normed, m.Heads, cache, pos).Scope("attn").Done()) // [B, n, E]
	}
	return m.head(ctx, x, wte) // [B, n, V]
}

// DecodeSession runs cached decoding steps of a Decoder on a backend: each call to Step feeds
// the next tokens, appends their keys and values to the cache and returns their logits. One
// graph is compiled per distinct step length (e.g. the prompt length, then 1).
type DecodeSession struct {
	model Decoder
	cache *KVCache
	exec  *context.Exec
}

// NewDecodeSession prepares cached decoding of batch sequences with model's variables in ctx.
func NewDecodeSession(backend backends.Backend, ctx *context.Context, model Decoder, batch int) (*DecodeSession, error) {
	cache, err := NewKVCache(batch, model.Heads, model.MaxLen, model.Embed/max(model.Heads, 1), model.Embed/max(model.Heads, 1))
	if err != nil {
		return nil, err
	}
	s := &DecodeSession{model: model, cache: cache}
	s.exec, err = context.NewExec(backend, ctx, func(ctx *context.Context, tokens, pos *Node) *Node {
		return model.StepLogits(ctx, tokens, pos, cache)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Cache returns the session's cache (its Len is the number of positions decoded).
func (s *DecodeSession) Cache() *KVCache { return s.cache }

// Reset starts new sequences.
func (s *DecodeSession) Reset() { s.cache.Reset() }

// Step feeds tokens [B, n] (int32) as the next n positions and returns their logits [B, n, V].
// It returns an error wrapping ErrCacheFull when they do not fit in MaxLen positions.
func (s *DecodeSession) Step(tokens *tensors.Tensor) (*tensors.Tensor, error) {
	if tokens.Rank() != 2 {
		return nil, &ArgumentError{Arg: "tokens", Msg: fmt.Sprintf("shape %s: want [batch, n]", tokens.Shape())}
	}
	pos, err := s.cache.Advance(tokens.Shape().Dim(1))
	if err != nil {
		return nil, err
	}
	out, err := s.exec.Exec(tokens, int32(pos))
	if err != nil {
		s.cache.length = pos // nothing was appended
		return nil, err
	}
	return out[0], nil
}

// Finalize releases the compiled graphs.
func (s *DecodeSession) Finalize() { s.exec.Finalize() }
