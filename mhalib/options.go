package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Options shared by every attention builder: ScaledDotProductAttention, FlashAttention,
// MultiHeadAttention and PreLNBlock.
//
// All compute softmax(q·kᵀ·scale + masks)·v and take the same options; they differ only in how
// (all scores at once, block by block, after projections, inside a residual block). The options
// live in one type, AttentionOptions, embedded in every builder: a setter written once is a
// method of SDPABuilder, FlashBuilder, MHABuilder and BlockBuilder, and returns that builder, so
// calls chain on any of them (ExampleAttentionOptions):
//
//	out, w := ScaledDotProductAttention(q, k, v).Causal(CausalTopLeft).Scale(0.125).DoneWithWeights()
//	out := FlashAttention(q, k, v).Causal(CausalTopLeft).Scale(0.125).Done()
//	out := MultiHeadAttention(ctx, x, x, x, 8).Causal(CausalTopLeft).Window(128, 0, AlignTopLeft).Done()
//
// The masks take PyTorch's names: AttnMask (attn_mask) and KeyPaddingMask (key_padding_mask).
// A new option is a field of attentionConfig, a setter on AttentionOptions, and its effect in
// maskSet (mask.go), attend (sdpa.go) and flashAttend (flash.go); the tests compare every
// builder on every option.

// attentionConfig holds the values of the shared options.
type attentionConfig struct {
	scale      float64 // factor of q·kᵀ, when scaleSet
	scaleSet   bool
	attnMask   Mask // attention mask, any shape Mask accepts
	keyPadding Mask // [B, Lk]
	causal     Causal
	fill       float64     // logit of blocked pairs
	dropout    dropoutSpec // of the attention weights, training only

	// Options of current LLMs (issue 13).
	gqa     bool      // k, v may have fewer heads than q (GQAOption.EnableGQA)
	window  *Window   // sliding window, or nil
	alibi   []float64 // ALiBi slope per query head, or nil
	softCap float64   // > 0: logits = cap·tanh(logits/cap)
	sinks   *Node     // [Hq] sink logits, or nil
}

// defaultAttentionConfig is the configuration before any setter: scale 1/√dk, no masks,
// blocked logits −inf, no dropout.
func defaultAttentionConfig() attentionConfig { return attentionConfig{fill: FillNegInf()} }

// AttentionOptions are the options of ScaledDotProductAttention, FlashAttention,
// MultiHeadAttention and PreLNBlock. It is embedded in their builders (Builder is the embedding
// builder's type), whose setters it provides; it is not used on its own.
type AttentionOptions[Builder any] struct {
	builder Builder // returned by every setter, for chaining
	cfg     attentionConfig
}

// newAttentionOptions returns the default options of builder b.
func newAttentionOptions[Builder any](b Builder) AttentionOptions[Builder] {
	return AttentionOptions[Builder]{builder: b, cfg: defaultAttentionConfig()}
}

// Scale sets the factor multiplying q·kᵀ. Default 1/√dk (in MultiHeadAttention 1/√d_n for
// head n of size d_n).
func (o *AttentionOptions[Builder]) Scale(s float64) Builder {
	o.cfg.scale, o.cfg.scaleSet = s, true
	return o.builder
}

// AttnMask sets the attention mask (PyTorch's attn_mask; see Mask for conventions and shapes:
// [Lq, Lk], [B·h, Lq, Lk], [B, h, Lq, Lk] or [B|1, h|1, Lq, Lk]). nn.MultiheadAttention's bool
// masks are MaskBlockedWhereTrue, F.scaled_dot_product_attention's MaskAttendWhereTrue. In
// MultiHeadAttention it covers the original Lk keys (the columns of add_bias_kv / add_zero_attn
// are added, allowed). Default: none.
func (o *AttentionOptions[Builder]) AttnMask(m Mask) Builder {
	o.cfg.attnMask = m
	return o.builder
}

// KeyPaddingMask sets a [B, Lk] mask of padded keys (PyTorch's key_padding_mask: bool, true =
// padding, i.e. MaskBlockedWhereTrue; or MaskAdditive). Default: none.
func (o *AttentionOptions[Builder]) KeyPaddingMask(m Mask) Builder {
	o.cfg.keyPadding = m
	return o.builder
}

// Causal sets a causal mask, combined with the others. Default NoCausal.
func (o *AttentionOptions[Builder]) Causal(c Causal) Builder {
	o.cfg.causal = c
	return o.builder
}

// Fill sets the value blocked logits take. Default FillNegInf() (−inf): a row with every key
// blocked gives zero weights and output 0 (and, from FlashAttention, lse −inf). With
// FillMinus1e9, the classic alternative, such a row averages all values.
func (o *AttentionOptions[Builder]) Fill(v float64) Builder {
	o.cfg.fill = v
	return o.builder
}

// Dropout drops attention weights with probability rate (survivors scaled by 1/(1−rate), as
// torch.nn.functional.dropout), only when ctx is in training mode for the graph
// (ctx.SetTraining), drawing from ctx's random number generator (seeded with
// ctx.SetRNGStateFromSeed). PreLNBlock also drops its attention output at the same rate.
// FlashAttention (and MultiHeadAttention's Flash formulation) refuses a rate > 0: it never forms
// the weights. Default: no dropout.
func (o *AttentionOptions[Builder]) Dropout(ctx *context.Context, rate float64) Builder {
	o.cfg.dropout = dropoutSpec{ctx: ctx, rate: rate}
	return o.builder
}

// Window restricts each query to a sliding window of keys (local attention, window.go):
// query i sees key j when p − left ≤ j ≤ p + right, with p = i for AlignTopLeft and
// p = i + Lk − Lq for AlignBottomRight (FlashAttention's convention, for decoding). A negative
// side is unbounded: Window(w, 0, …) is causal attention over the last w+1 keys. Combines with
// Causal and the masks (a pair must pass all); in MultiHeadAttention the add_bias_kv /
// add_zero_attn keys stay visible. FlashAttention skips the tiles wholly outside the window.
// Default: no window.
func (o *AttentionOptions[Builder]) Window(left, right int, align Alignment) Builder {
	o.cfg.window = &Window{Left: left, Right: right, Align: align}
	return o.builder
}

// ALiBi adds slope_h · (j − i) to the logits of query head h (alibi.go; ALiBiSlopes(Hq) gives the
// paper's slopes), after SoftCap and before the masks. MultiHeadAttention refuses it together
// with add_bias_kv / add_zero_attn (their keys have no position). Default: none.
func (o *AttentionOptions[Builder]) ALiBi(slopes []float64) Builder {
	o.cfg.alibi = slopes
	return o.builder
}

// SoftCap caps the scaled logits smoothly, logits = cap · tanh(logits / cap) (Gemma 2: 50), before
// ALiBi and the masks. Default 0: no cap.
func (o *AttentionOptions[Builder]) SoftCap(cap float64) Builder {
	o.cfg.softCap = cap
	return o.builder
}

// Sinks sets one learned logit per query head, sinks [Hq] in q's dtype, that joins every row's
// softmax and takes probability mass but contributes no value (gpt-oss):
//
//	w_j = exp(s_j) / (exp(sink_h) + Σ_j' exp(s_j'))
//
// so the weights of a row sum to less than 1. Gradients flow to sinks. Default: none.
func (o *AttentionOptions[Builder]) Sinks(sinks *Node) Builder {
	o.cfg.sinks = sinks
	return o.builder
}

// GQAOption is the EnableGQA option of ScaledDotProductAttention and FlashAttention, whose k and
// v come in with their heads. (MultiHeadAttention makes its own keys and values: KVHeads sets
// how many heads they get.) It is embedded in SDPABuilder and FlashBuilder.
type GQAOption[Builder any] struct {
	builder Builder
	on      *bool // the builder's attentionConfig.gqa
}

// EnableGQA lets k and v have fewer heads than q (grouped-query attention; multi-query with
// one): q [B, Hq, Lq, dk], k [B, Hkv, Lk, dk], v [B, Hkv, Lk, dv] with Hq a multiple of Hkv,
// query head h using key/value head h / (Hq/Hkv) — PyTorch's enable_gqa=True, the same as
// repeat_interleave of k and v over heads, but k and v are never repeated (gqa.go).
// Default false: Hq must equal Hkv.
func (o GQAOption[Builder]) EnableGQA(on bool) Builder {
	*o.on = on
	return o.builder
}

// prepare validates q [B, Hq, Lq, dk], k [B, Hkv, Lk, dk], v [B, Hkv, Lk, dv] and the options,
// and returns the masks normalised for them and the scale of q·kᵀ. It panics with an
// *ArgumentError on bad input.
func (c *attentionConfig) prepare(q, k, v *Node) (ms *maskSet, scale float64) {
	batch, heads, lq, lk := checkSDPAInputs(q, k, v, c.gqa)
	ms = c.maskSet(batch, heads, lq, lk, q.DType())
	scale = 1 / math.Sqrt(float64(q.Shape().Dim(-1)))
	if c.scaleSet {
		scale = c.scale
	}
	return ms, scale
}

// maskSet validates the masks, the modern options and the dropout rate for attention of
// [B, heads, Lq, dk] queries over Lk keys, and returns them normalised.
func (c *attentionConfig) maskSet(batch, heads, lq, lk int, dtype dtypes.DType) *maskSet {
	if r := c.dropout.rate; r < 0 || r > 1 || math.IsNaN(r) {
		panicArg("Dropout", "rate %g: must be in [0, 1]", r)
	}
	if c.dropout.rate > 0 && c.dropout.ctx == nil {
		panicArg("Dropout", "rate %g with a nil ctx: dropout needs the context's training mode and random numbers", c.dropout.rate)
	}
	ms := newMaskSet(batch, heads, lq, lk, dtype, c.attnMask, "attn_mask", c.keyPadding, "key_padding_mask", c.causal, c.fill)
	ms.setModern(c.window, c.alibi, c.softCap, c.sinks, dtype)
	return ms
}
