package mhalib

import (
	"fmt"
	"math"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Multi-head attention, "Attention Is All You Need" §3.2.2:
//
//	MultiHead(Q, K, V) = Concat(head_1, …, head_h)·Woᵀ,   head_n = Attention(Q·Wqₙᵀ, K·Wkₙᵀ, V·Wvₙᵀ)
//
// with PyTorch's nn.MultiheadAttention semantics (batch_first=True): the same weights give the
// same output, including bias on/off, kdim/vdim ≠ embed dim, add_bias_kv, add_zero_attn, and
// the way attn_mask / key_padding_mask are extended for the extra key columns.

// Formulation selects how the heads are computed. All give the same result (up to rounding).
type Formulation int

const (
	// HeadParallel computes all heads at once with batched DotGeneral on [B, h, L, dk].
	HeadParallel Formulation = iota
	// PerHeadLoop computes one head at a time and concatenates the head outputs.
	PerHeadLoop
	// Flash computes all heads block by block with FlashAttention (flash.go), never forming the
	// weights: Done only, equal heads, no dropout.
	Flash
	// Auto (the default) chooses Flash or HeadParallel by shape (auto.go): Flash where it is
	// allowed (Done, equal heads, no dropout, no HeadStrategy) and the score matrices are large
	// (many queries and many keys; on a GPU, more than 512 MiB of them), HeadParallel otherwise.
	Auto
)

// String names the formulation.
func (f Formulation) String() string {
	switch f {
	case HeadParallel:
		return "HeadParallel"
	case PerHeadLoop:
		return "PerHeadLoop"
	case Flash:
		return "Flash"
	case Auto:
		return "Auto"
	}
	return fmt.Sprintf("Formulation(%d)", int(f))
}

// DefaultScope is the scope MultiHeadAttention creates its variables in, under ctx's current scope.
const DefaultScope = "MultiHeadAttention"

// MHABuilder configures MultiHeadAttention; finish it with Done or DoneWithWeights. Its
// attention options are AttentionOptions' (shared with ScaledDotProductAttention and
// FlashAttention: masks, Causal, Scale, Fill, Dropout, Window, ALiBi, SoftCap, Sinks); the
// others below are its own.
type MHABuilder struct {
	AttentionOptions[*MHABuilder]
	ctx               *context.Context
	scope             string
	query, key, value *Node
	numHeads          int
	headSizes         []int
	useBias, biasSet  bool
	addBiasKV, kvSet  bool
	addZeroAttn       bool
	separate, sepSet  bool
	formulation       Formulation
	blockQ, blockK    int // Flash block sizes; 0: chosen by shape (flashBlocks)
	strategy          HeadStrategy
	strategySet       bool
	kvHeads           int // 0: numHeads
}

// MultiHeadAttention starts building multi-head attention of query over key/value:
//
//	query: [B, Lq, E]   key: [B, Lk, kdim]   value: [B, Lk, vdim]   →   output [B, Lq, E]
//
// E = query's last dimension is the embed dim; numHeads must divide it unless HeadSizes is set.
// For self-attention pass the same node three times. Variables live in ctx.In("MultiHeadAttention")
// (see Scope) under PyTorch's state_dict names (see projection.go).
func MultiHeadAttention(ctx *context.Context, query, key, value *Node, numHeads int) *MHABuilder {
	b := &MHABuilder{ctx: ctx, scope: DefaultScope, query: query, key: key, value: value,
		numHeads: numHeads, useBias: true, formulation: Auto}
	b.AttentionOptions = newAttentionOptions(b)
	return b
}

// KVHeads sets the number of key/value heads, grouped-query attention (gqa.go): the key and value
// projections produce kvHeads heads of size E/numHeads (k_proj_weight and v_proj_weight
// [kvHeads·E/numHeads, kdim], in_proj_bias [E + 2·kvHeads·E/numHeads]), and each group of
// numHeads/kvHeads query heads shares one of them (1: multi-query attention). It needs separate
// projections (set automatically), heads of equal size, no add_bias_kv, and the HeadParallel or
// Flash formulation. Default numHeads (multi-head attention).
func (b *MHABuilder) KVHeads(n int) *MHABuilder {
	b.kvHeads = n
	return b
}

// Graph returns the graph of the query, for building mask constants.
func (b *MHABuilder) Graph() *Graph { return b.query.Graph() }

// HeadSizes sets uneven head sizes (len = numHeads, Σ = E), e.g. HeadSizesFor(440, 100).
// Head n uses columns [Σ_{m<n} d_m, Σ_{m≤n} d_m) of the projections and scale 1/√d_n.
// Default: numHeads heads of E/numHeads.
func (b *MHABuilder) HeadSizes(sizes ...int) *MHABuilder {
	b.headSizes = append([]int(nil), sizes...)
	return b
}

// HeadStrategy sets how HeadParallel lays out uneven heads (see HeadStrategy). Default HeadsSlice
// for uneven heads; with even heads the default is a plain reshape, and setting a strategy forces
// that layout (useful to compare them). PerHeadLoop always loops.
func (b *MHABuilder) HeadStrategy(s HeadStrategy) *MHABuilder {
	b.strategy, b.strategySet = s, true
	return b
}

// UseBias sets whether the projections have biases (in_proj_bias, out_proj.bias). Default true,
// or, when the scope already holds projection weights without in_proj_bias, false.
func (b *MHABuilder) UseBias(useBias bool) *MHABuilder {
	b.useBias, b.biasSet = useBias, true
	return b
}

// AddBiasKV appends learned rows bias_k, bias_v [1, 1, E] to the projected keys and values
// (PyTorch add_bias_kv). Default false, or true when the scope already holds bias_k.
func (b *MHABuilder) AddBiasKV(add bool) *MHABuilder {
	b.addBiasKV, b.kvSet = add, true
	return b
}

// AddZeroAttn appends a zero key and value row per head (PyTorch add_zero_attn). Default false.
func (b *MHABuilder) AddZeroAttn(add bool) *MHABuilder {
	b.addZeroAttn = add
	return b
}

// SeparateProjections selects q_proj_weight/k_proj_weight/v_proj_weight (true) or the fused
// in_proj_weight [3E, E] (false). Default: fused iff kdim == vdim == E and the scope does not
// already hold q_proj_weight. Separate weights are required when kdim or vdim ≠ E.
func (b *MHABuilder) SeparateProjections(separate bool) *MHABuilder {
	b.separate, b.sepSet = separate, true
	return b
}

// Formulation selects Auto (default), HeadParallel, PerHeadLoop or Flash.
func (b *MHABuilder) Formulation(f Formulation) *MHABuilder {
	b.formulation = f
	return b
}

// FlashBlockSizes sets the query and key block sizes of the Flash formulation (see
// FlashBuilder.BlockSizes). Default 0, 0: chosen by shape (auto.go).
func (b *MHABuilder) FlashBlockSizes(blockQ, blockK int) *MHABuilder {
	b.blockQ, b.blockK = blockQ, blockK
	return b
}

// Scope sets the variable scope, under ctx's current scope. Default "MultiHeadAttention".
func (b *MHABuilder) Scope(name string) *MHABuilder {
	b.scope = name
	return b
}

// Done builds the attention and returns the output [B, Lq, E].
// It panics with an *ArgumentError on bad input; Exec (or Forward, or Try) returns it as an error.
func (b *MHABuilder) Done() *Node {
	out, _ := b.build(false)
	return out
}

// DoneWithWeights builds the attention and also returns the weights of every head,
// [B, h, Lq, Lk'], where Lk' = Lk (+1 with add_bias_kv) (+1 with add_zero_attn) as in PyTorch;
// ReduceMean(weights, 1) averages them over the heads, [B, Lq, Lk'] (PyTorch's default
// average_attn_weights=True). Weights are taken after dropout.
func (b *MHABuilder) DoneWithWeights() (output, weights *Node) {
	return b.build(true)
}

// dims are the validated sizes of one attention call.
type mhaDims struct {
	batch, lq, lk, embed, kdim, vdim int
	sizes                            []int // per-head sizes, len = numHeads
	even                             bool  // all heads the same size
	kvHeads                          int   // key/value heads (numHeads unless KVHeads)
}

// check validates the inputs and options.
func (b *MHABuilder) check() mhaDims {
	if b.ctx == nil {
		panicArg("ctx", "is nil")
	}
	for _, x := range []struct {
		name string
		n    *Node
		want string
	}{{"query", b.query, "[batch, Lq, embedDim]"}, {"key", b.key, "[batch, Lk, kdim]"}, {"value", b.value, "[batch, Lk, vdim]"}} {
		if x.n == nil {
			panicArg(x.name, "is nil")
		}
		if x.n.Rank() != 3 {
			panicArg(x.name, "shape %s: want rank 3 %s", x.n.Shape(), x.want)
		}
	}
	q, k, v := b.query.Shape(), b.key.Shape(), b.value.Shape()
	if !q.DType.IsFloat() {
		panicArg("query", "shape %s: want a float dtype", q)
	}
	if k.DType != q.DType {
		panicArg("key", "shape %s: dtype differs from query shape %s", k, q)
	}
	if v.DType != q.DType {
		panicArg("value", "shape %s: dtype differs from query shape %s", v, q)
	}
	d := mhaDims{batch: q.Dim(0), lq: q.Dim(1), embed: q.Dim(2), lk: k.Dim(1), kdim: k.Dim(2), vdim: v.Dim(2)}
	if k.Dim(0) != d.batch {
		panicArg("key", "shape %s: batch %d differs from query shape %s", k, k.Dim(0), q)
	}
	if v.Dim(0) != d.batch || v.Dim(1) != d.lk {
		panicArg("value", "shape %s: want [batch=%d, Lk=%d, vdim] (query %s, key %s)", v, d.batch, d.lk, q, k)
	}
	if d.lq == 0 {
		panicArg("query", "shape %s: %s", q, noQueries)
	}
	if d.lk == 0 {
		panicArg("key", "shape %s: %s", k, noKeys)
	}
	if d.embed == 0 || d.kdim == 0 || d.vdim == 0 {
		panicArg("query/key/value", "zero feature dimension: query %s, key %s, value %s", q, k, v)
	}
	if b.numHeads <= 0 {
		panicArg("numHeads", "%d: must be positive", b.numHeads)
	}
	if b.headSizes == nil {
		if d.embed%b.numHeads != 0 {
			panicArg("numHeads", "%d does not divide embed dim %d of query shape %s: give HeadSizes for uneven heads",
				b.numHeads, d.embed, q)
		}
		d.sizes = make([]int, b.numHeads)
		for n := range d.sizes {
			d.sizes[n] = d.embed / b.numHeads
		}
	} else {
		if len(b.headSizes) != b.numHeads {
			panicArg("HeadSizes", "%v has %d sizes but numHeads is %d", b.headSizes, len(b.headSizes), b.numHeads)
		}
		checkHeadSizes(b.headSizes, d.embed)
		d.sizes = b.headSizes
	}
	d.even = true
	for _, s := range d.sizes {
		d.even = d.even && s == d.sizes[0]
	}
	if b.formulation != HeadParallel && b.formulation != PerHeadLoop && b.formulation != Flash && b.formulation != Auto {
		panicArg("Formulation", "unknown value %d", int(b.formulation))
	}
	if b.blockQ < 0 || b.blockK < 0 || (b.blockQ == 0) != (b.blockK == 0) {
		panicArg("FlashBlockSizes", "blockQ=%d, blockK=%d: both ≥ 1, or both 0 (chosen by shape)", b.blockQ, b.blockK)
	}
	d.kvHeads = b.numHeads
	if b.kvHeads != 0 && b.kvHeads != b.numHeads {
		switch {
		case b.kvHeads < 0 || b.numHeads%b.kvHeads != 0:
			panicArg("KVHeads", "%d does not divide the %d query heads", b.kvHeads, b.numHeads)
		case b.headSizes != nil:
			panicArg("KVHeads", "%d: grouped-query attention needs heads of equal size, got HeadSizes %v", b.kvHeads, b.headSizes)
		case b.formulation == PerHeadLoop || b.strategySet:
			panicArg("KVHeads", "%d: grouped-query attention needs the Auto, HeadParallel (default strategy) or Flash formulation", b.kvHeads)
		case b.addBiasKV:
			panicArg("KVHeads", "%d: add_bias_kv is not supported with grouped-query attention", b.kvHeads)
		case b.sepSet && !b.separate:
			panicArg("KVHeads", "%d: grouped-query attention needs separate projections (k/v project to fewer features than q)", b.kvHeads)
		}
		d.kvHeads = b.kvHeads
	}
	return d
}

// resolveDefaults fills the options left unset from what the scope already holds
// (e.g. variables loaded by LoadStateDict), then from the shapes.
func (b *MHABuilder) resolveDefaults(ctx *context.Context, d mhaDims) (separate, useBias, addBiasKV bool) {
	has := func(name string) bool { return ctx.GetVariableByScopeAndName(ctx.Scope(), name) != nil }
	separate = b.separate
	if !b.sepSet {
		separate = d.kdim != d.embed || d.vdim != d.embed || has(VarQProjWeight) || d.kvHeads != b.numHeads
	}
	if !separate && (d.kdim != d.embed || d.vdim != d.embed) {
		panicArg("SeparateProjections", "false (fused in_proj_weight [3E, E]) needs kdim == vdim == E = %d, got key %s, value %s",
			d.embed, b.key.Shape(), b.value.Shape())
	}
	useBias = b.useBias
	if !b.biasSet && (has(VarInProjWeight) || has(VarQProjWeight)) && !has(VarInProjBias) {
		useBias = false
	}
	addBiasKV = b.addBiasKV
	if !b.kvSet {
		addBiasKV = has(VarBiasK)
	}
	// Weights that hold values (loaded, or trained) must not be silently ignored in favour of
	// freshly initialised ones of the other layout.
	loaded := func(name string) bool {
		v := ctx.GetVariableByScopeAndName(ctx.Scope(), name)
		return v != nil && v.HasValue()
	}
	switch {
	case separate && loaded(VarInProjWeight):
		panicArg("SeparateProjections", "true, but scope %q holds a fused in_proj_weight", ctx.Scope())
	case !separate && loaded(VarQProjWeight):
		panicArg("SeparateProjections", "false, but scope %q holds separate q/k/v_proj_weight", ctx.Scope())
	case useBias && !has(VarInProjBias) && (loaded(VarInProjWeight) || loaded(VarQProjWeight)):
		panicArg("UseBias", "true, but scope %q holds projection weights without in_proj_bias", ctx.Scope())
	case addBiasKV && !has(VarBiasK) && (loaded(VarInProjWeight) || loaded(VarQProjWeight)):
		panicArg("AddBiasKV", "true, but scope %q holds projection weights without bias_k/bias_v", ctx.Scope())
	}
	return
}

// build is Done / DoneWithWeights.
func (b *MHABuilder) build(withWeights bool) (output, weights *Node) {
	d := b.check()
	ctx := b.ctx.In(b.scope)
	init := initOf(ctx)
	separate, useBias, addBiasKV := b.resolveDefaults(ctx, d)
	g := b.query.Graph()
	dtype := b.query.DType()
	E, h := d.embed, b.numHeads

	// Masks over the original keys, validated against the inputs' shapes.
	ms := b.cfg.maskSet(d.batch, h, d.lq, d.lk, dtype)

	// 1) Projections.
	kvWidth := E // Hkv·dk with grouped-query attention (even heads only)
	if d.kvHeads != h {
		kvWidth = d.kvHeads * (E / h)
	}
	q, k, v := inProjection(ctx, b.query, b.key, b.value, E, kvWidth, separate, useBias, init) // [B, Lq, E], [B, Lk, kvWidth] ×2

	// 2) add_bias_kv: one learned key/value row, visible to every query.
	extra := 0
	if addBiasKV {
		kvInit := uniformInit(ctx, XavierBound(E, E))
		if init != InitXavierUniform {
			kvInit = normalInit(ctx, math.Sqrt(2/float64(E+E))) // xavier_normal_ of [1, 1, E]
		}
		biasK := variable(ctx, g, VarBiasK, dtype, []int{1, 1, E}, kvInit)   // [1, 1, E]
		biasV := variable(ctx, g, VarBiasV, dtype, []int{1, 1, E}, kvInit)   // [1, 1, E]
		k = concatAxis([]*Node{k, BroadcastToDims(biasK, d.batch, 1, E)}, 1) // [B, Lk+1, E]
		v = concatAxis([]*Node{v, BroadcastToDims(biasV, d.batch, 1, E)}, 1) // [B, Lk+1, E]
		extra++
	}
	// 3) add_zero_attn: one zero key/value row (zero in every head), visible to every query.
	if b.addZeroAttn {
		zeros := Zeros(g, shapes.Make(dtype, d.batch, 1, k.Shape().Dim(2))) // [B, 1, kvWidth]
		k = concatAxis([]*Node{k, zeros}, 1)                                // [B, Lk'+1, E]
		v = concatAxis([]*Node{v, zeros}, 1)                                // [B, Lk'+1, E]
		extra++
	}
	if extra > 0 && b.cfg.alibi != nil {
		panicArg("ALiBi", "not supported with add_bias_kv / add_zero_attn: their extra keys have no position")
	}
	ms = ms.extendKeys(extra)
	drop := b.cfg.dropout

	// 4) Attention in every head, 5) heads merged back to [B, Lq, E].
	formulation := b.formulation
	if formulation == Auto {
		formulation = b.autoFormulation(d, k.Shape().Dim(1), withWeights, onGPU(g.Backend()))
	}
	var merged *Node
	if formulation == Flash {
		merged = b.flashHeads(q, k, v, d, ms, withWeights) // [B, Lq, E]
	} else if formulation != PerHeadLoop && d.even && !b.strategySet {
		var qh, kh headsOperand
		if !differentiableSlices(g) && d.kvHeads == h {
			// The pure-Go backend: the scores read the projections' [B, L, h, dk] through their
			// axes, no transposes of q and k (seqmajor.go).
			qh, kh = seqMajorHeads(q, h), seqMajorHeads(k, h) // [B, Lq, h, dk], [B, Lk', h, dk]
		} else {
			qh, kh = headMajor(SplitHeads(q, h)), headMajor(SplitHeads(k, d.kvHeads)) // [B, h, Lq, dk], [B, Hkv, Lk', dk]
		}
		vh := SplitHeads(v, d.kvHeads) // [B, Hkv, Lk', dv]
		out, w := attendHeads(qh, kh, vh, []float64{b.headScale(d.sizes[0])}, ms, drop, withWeights)
		merged, weights = MergeHeads(out), w // [B, Lq, E], [B, h, Lq, Lk']
	} else {
		strategy := HeadsLoop
		if formulation != PerHeadLoop {
			strategy = HeadsSlice
			if b.strategySet {
				strategy = b.strategy
			}
		}
		merged, weights = b.unevenAttention(q, k, v, d.sizes, strategy, ms, drop, withWeights)
	}

	// 6) Output projection.
	output = outProjection(ctx, merged, E, useBias, init) // [B, Lq, E]
	if !withWeights {
		return output, nil
	}
	return output, weights // [B, Lq, E], [B, h, Lq, Lk']
}

// headScale is the logit scale of a head of size d: Scale if set, else 1/√d.
func (b *MHABuilder) headScale(d int) float64 {
	if b.cfg.scaleSet {
		return b.cfg.scale
	}
	return 1 / math.Sqrt(float64(d))
}

// unevenAttention computes the heads block by block as the strategy lays them out:
// q [B, Lq, E], k, v [B, Lk', E] → merged [B, Lq, E] and (if withWeights) weights [B, h, Lq, Lk'].
func (b *MHABuilder) unevenAttention(q, k, v *Node, sizes []int, s HeadStrategy, ms *maskSet,
	drop dropoutSpec, withWeights bool) (merged, weights *Node) {
	qs, ks, vs := SplitUnevenHeads(q, sizes, s), SplitUnevenHeads(k, sizes, s), SplitUnevenHeads(v, sizes, s)
	outs := make([]*Node, len(qs))
	ws := make([]*Node, len(qs))
	for i, grp := range headGroups(sizes, s) {
		scales := make([]float64, grp.count) // one scale per head of the block
		for n := range scales {
			scales[n] = b.headScale(sizes[grp.first+n])
		}
		if allEqual(scales) {
			scales = scales[:1]
		}
		// qs[i]: [B, count, Lq, size], ks[i], vs[i]: [B, count, Lk', size]
		outs[i], ws[i] = attendWith(qs[i], ks[i], vs[i], scales, ms.forHeads(grp.first, grp.count), drop, withWeights)
	}
	merged = MergeUnevenHeads(outs, sizes, s) // [B, Lq, E]
	if withWeights {
		weights = concatAxis(ws, 1) // [B, h, Lq, Lk']
	}
	return merged, weights
}

func allEqual(xs []float64) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}
