package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Multi-head latent attention (MLA), DeepSeek-V2 (arXiv 2405.04434, §2.1.2–2.1.3).
//
// MHA caches 2·H·dh numbers per token and layer; GQA shares keys and values between heads to
// cache fewer. MLA instead compresses keys and values jointly into a small latent c_kv and
// rebuilds per-head keys and values from it, so that only the latent is cached:
//
//	c_kv   = W_DKV x                       [dc]      (cached)
//	k_C,i  = W_UK,i c_kv    v_C,i = W_UV,i c_kv      per head, [dh] and [dv]
//
// RoPE cannot go through W_UK (a rotation between W_UK and the query would depend on the
// position and could not be absorbed), so a small decoupled key carries the position, shared by
// all heads, and each head gets a decoupled query:
//
//	k_R    = RoPE(W_KR x)                  [dr]      (cached)
//	c_q    = W_DQ x (or x itself: DeepSeek-V2-Lite has no query compression)
//	q_C,i  = W_UQ,i c_q     q_R,i = RoPE(W_QR,i c_q)
//	score  = (q_C,i·k_C,i + q_R,i·k_R) / √(dh + dr)
//	o_i    = Σ_j softmax(score)_j v_C,i,j       out = W_O [o_1; …; o_H]
//
// The absorbed form (§2.1.2, "absorb W_UK into W_UQ and W_UV into W_O") never builds k_C or v_C:
//
//	q_C,i·(W_UK,i c_kv_j) = (W_UK,iᵀ q_C,i)·c_kv_j      the query moves into the latent space [dc]
//	Σ_j w_j W_UV,i c_kv_j = W_UV,i (Σ_j w_j c_kv_j)       the value map moves after the sum
//
// so attention runs directly over the cache (c_kv, k_R), like MQA with one shared head of width
// dc + dr. Both forms are here (Absorbed), equal up to rounding; mhatest.MLA and
// mhatest.MLAAbsorbed are the float64 references. The released DeepSeek checkpoints also
// normalise c_kv and c_q with an RMSNorm (kv_a_layernorm); the paper's equations, written here,
// do not. The weights are Linear layers without bias in the scopes q_down (only with
// QueryLatent > 0), q_up, q_rope, kv_down, k_rope, k_up, v_up and out.

// MLAConfig holds MLA's dimensions (DeepSeek-V2-Lite: Heads 16, HeadDim 128, RopeDim 64,
// ValueDim 128, Latent 512, QueryLatent 0).
type MLAConfig struct {
	Heads       int // H, num_attention_heads
	HeadDim     int // dh, qk_nope_head_dim: the content part of queries and keys
	RopeDim     int // dr, qk_rope_head_dim: the decoupled RoPE part
	ValueDim    int // dv, v_head_dim
	Latent      int // dc, kv_lora_rank: the cached latent
	QueryLatent int // q_lora_rank; 0: no query compression

	RoPETheta      float64        // 0: DefaultRoPETheta
	RoPEConvention RoPEConvention // of the decoupled parts
}

// MLABuilder configures MultiHeadLatentAttention; finish it with Done.
type MLABuilder struct {
	ctx      *context.Context
	x        *Node
	cfg      MLAConfig
	causal   Causal
	absorbed bool
	scope    string
	cache    *KVCache
	pos      *Node
}

// MultiHeadLatentAttention starts building MLA self-attention over x [B, L, E] → [B, L, E].
func MultiHeadLatentAttention(ctx *context.Context, x *Node, cfg MLAConfig) *MLABuilder {
	return &MLABuilder{ctx: ctx, x: x, cfg: cfg, scope: "MultiHeadLatentAttention"}
}

// Causal masks keys after the query (decoder self-attention). Queries and keys are the same L
// positions, so CausalTopLeft and CausalBottomRight are the same mask here. Default NoCausal.
// With a cache the mask is always causal over the cached positions.
func (b *MLABuilder) Causal(c Causal) *MLABuilder {
	b.causal = c
	return b
}

// Absorbed computes the absorbed form (W_UK on the query side, W_UV after the weighted sum).
// Default false: the explicit form. With a cache the absorbed form is always used.
func (b *MLABuilder) Absorbed(on bool) *MLABuilder {
	b.absorbed = on
	return b
}

// Scope sets the variable scope under ctx's current scope. Default "MultiHeadLatentAttention".
func (b *MLABuilder) Scope(name string) *MLABuilder {
	b.scope = name
	return b
}

// Cache makes this a decoding step: x holds the n new positions starting at position pos
// (scalar int32), whose latent c_kv [B, 1, n, dc] and RoPE key k_R [B, 1, n, dr] are appended to
// cache (NewKVCache(B, 1, maxLen, Latent, RopeDim), keys = c_kv, values = k_R: only dc + dr
// numbers per token and layer), and the new queries attend, absorbed and causally
// (position pos+i sees 0 … pos+i), over the cache. Default: no cache.
func (b *MLABuilder) Cache(cache *KVCache, pos *Node) *MLABuilder {
	b.cache, b.pos = cache, pos
	return b
}

// Done builds the attention and returns [B, L, E]. It panics with an *ArgumentError for bad
// shapes or dimensions.
func (b *MLABuilder) Done() *Node {
	c, x := b.cfg, b.x
	if x == nil || x.Rank() != 3 || !x.DType().IsFloat() {
		panicArg("x", "MultiHeadLatentAttention wants a float x [batch, length, embed], got %v", shapeOf(x))
	}
	if c.Heads < 1 || c.HeadDim < 1 || c.RopeDim < 0 || c.RopeDim%2 != 0 || c.ValueDim < 1 || c.Latent < 1 || c.QueryLatent < 0 {
		panicArg("MLAConfig", "%+v: want Heads, HeadDim, ValueDim, Latent ≥ 1, an even RopeDim ≥ 0, QueryLatent ≥ 0", c)
	}
	if b.causal < NoCausal || b.causal > CausalBottomRight {
		panicArg("Causal", "unknown value %d", int(b.causal))
	}
	ctx := b.ctx.In(b.scope)
	g, dt := x.Graph(), x.DType()
	B, L, E := x.Shape().Dim(0), x.Shape().Dim(1), x.Shape().Dim(2)
	H, dh, dr, dv, dc := c.Heads, c.HeadDim, c.RopeDim, c.ValueDim, c.Latent
	init := initOf(ctx)
	lin := func(scope string, in *Node, out int) *Node { return Linear(ctx.In(scope), in, out, false) }
	weight := func(scope string, out, in int) *Node { // a Linear's weight [out, in], the same variable
		return variable(ctx.In(scope), g, "weight", dt, []int{out, in}, linearWeightInit(ctx, init, out, in))
	}
	rope := func(y *Node) *Node {
		theta := c.RoPETheta
		if theta == 0 {
			theta = DefaultRoPETheta
		}
		r := RoPE(y).Theta(theta).Convention(c.RoPEConvention)
		if b.pos != nil {
			r.Position(b.pos)
		}
		return r.Done()
	}

	// 1) Queries: content q_C [B, H, L, dh] and decoupled q_R [B, H, L, dr].
	cq := x
	if c.QueryLatent > 0 {
		cq = lin("q_down", x, c.QueryLatent) // [B, L, dcq]
	}
	qC := SplitHeads(lin("q_up", cq, H*dh), H) // [B, H, L, dh]
	var qR *Node
	if dr > 0 {
		qR = rope(SplitHeads(lin("q_rope", cq, H*dr), H)) // [B, H, L, dr]
	}
	// 2) What is cached: the latent c_kv [B, L, dc] and the shared RoPE key k_R [B, 1, L, dr].
	latent := lin("kv_down", x, dc) // [B, L, dc]
	var kR *Node
	if dr > 0 {
		kR = rope(Reshape(lin("k_rope", x, dr), B, 1, L, dr)) // [B, 1, L, dr]
	}
	Lk := L
	if b.cache != nil {
		b.checkCache(B, L)
		if dr == 0 {
			panicArg("Cache", "needs RopeDim > 0 (the cache holds c_kv and k_R)")
		}
		keys, values := b.cache.Append(ctx.In("kv_cache"), Reshape(latent, B, 1, L, dc), kR, b.pos) // [B, 1, maxLen, dc], [B, 1, maxLen, dr]
		Lk = b.cache.maxLen
		latent, kR = Reshape(keys, B, Lk, dc), values
	}
	scale := 1 / math.Sqrt(float64(dh+dr))
	absorbed := b.absorbed || b.cache != nil

	// 3) Scores [B, H, L, Lk]: content part + decoupled RoPE part.
	var logits, vC, wUV *Node
	if absorbed {
		wUK := Reshape(weight("k_up", H*dh, dc), H, dh, dc)                     // [H, dh, dc]
		qt := DotGeneral(qC, []int{3}, []int{1}, wUK, []int{1}, []int{0})       // [H, B, L, dc]: W_UK,iᵀ q_C,i
		qt = TransposeAllDims(qt, 1, 0, 2, 3)                                   // [B, H, L, dc]
		logits = DotGeneral(qt, []int{3}, []int{0}, latent, []int{2}, []int{0}) // [B, H, L, Lk]
		wUV = Reshape(weight("v_up", H*dv, dc), H, dv, dc)                      // [H, dv, dc]
	} else {
		kC := SplitHeads(lin("k_up", latent, H*dh), H)                            // [B, H, Lk, dh]
		vC = SplitHeads(lin("v_up", latent, H*dv), H)                             // [B, H, Lk, dv]
		logits = DotGeneral(qC, []int{3}, []int{0, 1}, kC, []int{3}, []int{0, 1}) // [B, H, L, Lk]
	}
	if dr > 0 {
		kR3 := Reshape(kR, B, Lk, dr)                                                     // [B, Lk, dr]
		logits = Add(logits, DotGeneral(qR, []int{3}, []int{0}, kR3, []int{2}, []int{0})) // [B, H, L, Lk]
	}
	logits = MulScalar(logits, scale)

	// 4) Causal mask: top-left over L, or position pos+i seeing 0 … pos+i over the cache.
	if b.causal != NoCausal || b.cache != nil {
		tile := shapes.Make(dtypes.Int32, 1, 1, L, Lk)
		i := Iota(g, tile, 2) // [1, 1, L, Lk]
		if b.pos != nil {
			i = Add(i, b.pos)
		}
		allowed := BroadcastToDims(LessOrEqual(Iota(g, tile, 3), i), B, H, L, Lk)
		logits = Where(allowed, logits, BroadcastToDims(Scalar(g, dt, math.Inf(-1)), B, H, L, Lk))
	}
	weights := safeSoftmax(logits) // [B, H, L, Lk]

	// 5) Values: v_C directly, or the weighted latent mapped by W_UV,i.
	var o *Node // [B, H, L, dv]
	if absorbed {
		ctxLatent := DotGeneral(weights, []int{3}, []int{0}, latent, []int{1}, []int{0}) // [B, H, L, dc]
		o = DotGeneral(ctxLatent, []int{3}, []int{1}, wUV, []int{2}, []int{0})           // [H, B, L, dv]
		o = TransposeAllDims(o, 1, 0, 2, 3)                                              // [B, H, L, dv]
	} else {
		o = DotGeneral(weights, []int{3}, []int{0, 1}, vC, []int{2}, []int{0, 1}) // [B, H, L, dv]
	}
	return lin("out", MergeHeads(o), E) // [B, L, E]
}

// checkCache validates the cache against the configuration and x [B, n, E].
func (b *MLABuilder) checkCache(batch, n int) {
	c := b.cache
	if c.batch != batch || c.heads != 1 || c.keyDim != b.cfg.Latent || c.valueDim != b.cfg.RopeDim {
		panicArg("Cache", "[B=%d, h=%d, maxLen=%d, %d, %d]: want NewKVCache(B=%d, 1, maxLen, Latent=%d, RopeDim=%d) for MLA",
			c.batch, c.heads, c.maxLen, c.keyDim, c.valueDim, batch, b.cfg.Latent, b.cfg.RopeDim)
	}
	if b.pos == nil || !b.pos.IsScalar() || b.pos.DType() != dtypes.Int32 {
		panicArg("pos", "must be a scalar int32 node")
	}
	if n > c.maxLen {
		panicArg("x", "%d new positions, more than the cache's capacity %d", n, c.maxLen)
	}
}
