package mhalib

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// KV cache for decoding.
//
// A decoder produces one token at a time, and at step t its attention needs the keys and values
// of all t earlier positions. Recomputing them means a forward pass over the whole prefix at every
// step. A KV cache keeps them instead, preallocated at full size because graph shapes are static:
//
//	keys   [B, h, maxLen, dk]
//	values [B, h, maxLen, dv]
//
// A step with n new positions (n = 1 when decoding, the prompt length when prefilling) projects
// only those n, appends their keys and values at positions [pos, pos+n), and attends their n
// queries over the cache with bottom-right causal alignment: new query i sits at position pos+i
// and sees positions 0 … pos+i. Positions ≥ pos+n hold stale or zero entries and are masked out.
//
// Where the state lives. The tensors are non-trainable context variables (scope "kv_cache"
// under the attention's scope); the compiled step reads them and context.Exec stores their new
// values after each run. The position pos is a scalar int32 input of the step, so one compiled
// graph serves every step. Append writes the whole [B, h, maxLen, d] tensors: a
// DynamicUpdateSlice where the backend has it — on XLA still a fresh copy of the cache, O(maxLen)
// per step, because GoMLX v0.26 declares no input/output aliasing, so the donated buffer is not
// reused (the optimised HLO shows a copy of each cache parameter) — and on the pure-Go backend,
// which lacks it, Where(position ∈ [pos, pos+n), new, cache), also a copy. Step (the StepCache
// path: CachedSelfAttention, mhalib/decode) avoids both: it keeps the cache in chunks of T
// positions and a one-token step writes only the chunk being filled (kvchunks.go). The attention
// of a step spans all positions (masked), O(maxLen) per query, as PyTorch's SDPA over a
// preallocated cache does.
//
// The host side. KVCache counts the positions filled: Advance(n) returns the position for the
// next n tokens and fails with an error (naming the capacity) when they do not fit; Reset starts
// a new sequence. One KVCache can serve every layer of a model — the layers advance together —
// while each layer keeps its own tensors in its own scope.

// StepCache is a key/value cache as one decoding step uses it. KVCache (every position, up to
// its capacity) and WindowedKVCache (a ring of the last Left+1 positions, for sliding-window
// attention) both are one; CachedSelfAttention and mhalib/decode take either.
//
// On the host, Advance reserves the positions of the next n tokens and returns the first, pos
// (an error when they do not fit), Len counts the positions seen and Reset starts new
// sequences. In the graph, Step attends the new queries q [B, Hq, n, dk] (Hq a multiple of the
// cache's h heads) at positions pos … pos+n−1 over the earlier positions the cache keeps and the
// new keys k [B, h, n, dk] and values v [B, h, n, dv], causally, with logits scaled by scale;
// it stores k and v in variables of ctx's scope and returns [B, Hq, n, dv]. pos is a scalar
// int32 node.
type StepCache interface {
	Len() int
	Reset()
	Advance(n int) (pos int, err error)
	Step(ctx *context.Context, q, k, v, pos *Node, scale float64) *Node
}

// KVCache describes a key/value cache of capacity maxLen and counts the positions filled.
// Create it with NewKVCache.
type KVCache struct {
	batch, heads, maxLen, keyDim, valueDim int
	length                                 int
	chunkLen                               int                 // T, positions per chunk of Step's layout (kvchunks.go)
	sets                                   []*chunkSet         // Step's variables, per scope, for rotate and Reset
	vars                                   []*context.Variable // Append's variables, for Reset
}

// NewKVCache returns an empty cache for keys [batch, heads, maxLen, keyDim] and values
// [batch, heads, maxLen, valueDim]; it returns an *ArgumentError if a dimension is not positive.
func NewKVCache(batch, heads, maxLen, keyDim, valueDim int) (*KVCache, error) {
	if batch < 1 || heads < 1 || maxLen < 1 || keyDim < 1 || valueDim < 1 {
		return nil, &ArgumentError{Arg: "NewKVCache", Msg: fmt.Sprintf(
			"batch=%d, heads=%d, maxLen=%d, keyDim=%d, valueDim=%d: all must be positive", batch, heads, maxLen, keyDim, valueDim)}
	}
	return &KVCache{batch: batch, heads: heads, maxLen: maxLen, keyDim: keyDim, valueDim: valueDim, chunkLen: defaultChunkLen(maxLen)}, nil
}

// Len is the number of positions filled.
func (c *KVCache) Len() int { return c.length }

// Cap is the capacity maxLen.
func (c *KVCache) Cap() int { return c.maxLen }

// Reset empties the cache for a new sequence. The positions the last sequence filled are set
// back to zero in the tensors of every scope the cache was used in (kvreset.go): entries beyond
// the filled positions are masked out, but a masked NaN or ±Inf left by a broken sequence would
// still reach the output (0·NaN is NaN).
func (c *KVCache) Reset() {
	filled := c.length
	c.length = 0
	if filled == 0 {
		return
	}
	zeroVariables(c.vars)
	for _, s := range c.sets {
		for kv := range 2 {
			zeroVariables(s.tail[kv : kv+1])
			for i, chunk := range s.chunks[kv] {
				if i*c.chunkLen < filled { // later chunks were never written: still zero
					zeroVariables([]*context.Variable{chunk})
				}
			}
		}
	}
}

// ErrCacheFull is wrapped by the error Advance returns when the cache has no room left.
var ErrCacheFull = fmt.Errorf("mhalib: KV cache full")

// Advance reserves the next n positions and returns the first of them, pos: feed it (as a
// scalar int32 tensor) to the step that appends n keys and values. It returns an error
// wrapping ErrCacheFull, and reserves nothing, when Len()+n exceeds Cap(). When pos begins a new
// chunk of Step's layout, it moves the full tail into its chunk (kvchunks.go: a swap of tensors).
func (c *KVCache) Advance(n int) (pos int, err error) {
	if n < 1 {
		return 0, &ArgumentError{Arg: "n", Msg: fmt.Sprintf("%d: Advance needs at least one position", n)}
	}
	if c.length+n > c.maxLen {
		return 0, fmt.Errorf("%w: %d positions filled + %d new > capacity maxLen = %d", ErrCacheFull, c.length, n, c.maxLen)
	}
	pos = c.length
	c.length += n
	c.rotate(pos)
	return pos, nil
}

// Cache variable names, in the scope given to Append.
const (
	VarCacheKeys   = "keys"
	VarCacheValues = "values"
)

// Append stores k [B, h, n, dk] and v [B, h, n, dv] at positions [pos, pos+n) of the cache
// tensors in ctx's scope (variables "keys" and "values", created as zeros, not trainable) and
// returns the updated tensors keys [B, h, maxLen, dk] and values [B, h, maxLen, dv], which also
// become the variables' new values. pos is a scalar int32 node; pos+n ≤ maxLen is the caller's
// promise (Advance checks it on the host).
func (c *KVCache) Append(ctx *context.Context, k, v, pos *Node) (keys, values *Node) {
	c.checkBlock("k", k, c.keyDim)
	c.checkBlock("v", v, c.valueDim)
	if k.Shape().Dim(2) != v.Shape().Dim(2) {
		panicArg("v", "shape %s: %d positions, but k shape %s has %d", v.Shape(), v.Shape().Dim(2), k.Shape(), k.Shape().Dim(2))
	}
	if pos == nil || !pos.IsScalar() || pos.DType() != dtypes.Int32 {
		panicArg("pos", "must be a scalar int32 node")
	}
	keys = c.appendTo(ctx, VarCacheKeys, k, pos)
	values = c.appendTo(ctx, VarCacheValues, v, pos)
	return keys, values
}

// checkBlock validates a block of new keys or values x [B, h, n, dim].
func (c *KVCache) checkBlock(name string, x *Node, dim int) {
	if x == nil {
		panicArg(name, "is nil")
	}
	d := x.Shape().Dimensions
	if len(d) != 4 || d[0] != c.batch || d[1] != c.heads || d[3] != dim || d[2] < 1 || d[2] > c.maxLen {
		panicArg(name, "shape %s: want [B=%d, h=%d, n (1…maxLen=%d), %d] for this cache", x.Shape(), c.batch, c.heads, c.maxLen, dim)
	}
}

// appendTo writes x [B, h, n, dim] at [pos, pos+n) of the cache variable name: [B, h, maxLen, dim].
func (c *KVCache) appendTo(ctx *context.Context, name string, x, pos *Node) *Node {
	g := x.Graph()
	dims := x.Shape().Clone().Dimensions
	dims[2] = c.maxLen
	cacheShape := shapes.Make(x.DType(), dims...)
	variable := ctx.GetVariableByScopeAndName(ctx.Scope(), name)
	if variable == nil {
		variable = ctx.Checked(false).WithInitializer(zeroInit).VariableWithShape(name, cacheShape)
		variable.Trainable = false
	} else if !variable.Shape().Equal(cacheShape) {
		panicArg("cache variable "+ctx.Scope()+"/"+name, "holds shape %s, this cache needs %s", variable.Shape(), cacheShape)
	}
	c.vars = recordVariable(c.vars, variable)
	updated := placeRows(variable.ValueGraph(g), x, pos) // [B, h, maxLen, dim]
	variable.SetValueGraph(updated)
	return updated
}

// placeRows returns cache [B, h, S, dim] with rows [at, at+n) replaced by x [B, h, n, dim]
// (at a scalar int32 node, at+n ≤ S the caller's promise): DynamicUpdateSlice where the backend
// has it, else Where(row ∈ [at, at+n), x's row, cache) — O(S) either way on the graph's side.
func placeRows(cache, x, at *Node) *Node {
	g := x.Graph()
	dims := cache.Shape().Dimensions
	S, n := dims[2], x.Shape().Dim(2)
	if g.Backend().Capabilities().Operations[backends.OpTypeDynamicUpdateSlice] {
		zero := ScalarZero(g, dtypes.Int32)
		return DynamicUpdateSlice(cache, x, []*Node{zero, zero, at, zero})
	}
	if n == 1 && x.DType().IsFloat() {
		return placeRow(cache, x, at)
	}
	if n == 1 {
		// Row at takes x. The condition is made at the cache's row width, [1, 1, S, dim] (small),
		// so that its broadcast over B and h copies runs of S·dim values: broadcasting [S] along
		// dim filled runs of dim values one by one (8 192 runs per [1, 32, 256, 64] tail), the
		// largest element-wise item of the modern decode step's profile on the pure-Go backend.
		dim := dims[3]
		row := Div(Iota(g, shapes.Make(dtypes.Int32, S*dim), 0), Scalar(g, dtypes.Int32, dim)) // [S·dim]: the row of each value
		cond := BroadcastToDims(Reshape(Equal(row, at), 1, 1, S, dim), dims...)                // [B, h, S, dim]
		return Where(cond, BroadcastToDims(x, dims...), cache)
	}
	// Row j of the cache takes x[j − at] when at ≤ j < at+n.
	j := Iota(g, shapes.Make(dtypes.Int32, S), 0)                           // [S]
	rel := Sub(j, at)                                                       // [S]
	inBlock := LogicalAnd(GreaterOrEqual(rel, ScalarZero(g, dtypes.Int32)), // [S]
		LessThan(rel, Scalar(g, dtypes.Int32, n)))
	// One-hot placement: spread[.., j, :] = Σ_i [j − at = i]·x[.., i, :].
	i := Iota(g, shapes.Make(dtypes.Int32, S, n), 1)                                       // [S, n]
	onehot := ConvertDType(Equal(BroadcastToDims(Reshape(rel, S, 1), S, n), i), x.DType()) // [S, n]
	spread := DotGeneral(x, []int{2}, nil, onehot, []int{1}, nil)                          // [B, h, dim, S]
	spread = TransposeAllDims(spread, 0, 1, 3, 2)                                          // [B, h, S, dim]
	cond := BroadcastToDims(Reshape(inBlock, 1, 1, S, 1), dims...)                         // [B, h, S, dim]
	return Where(cond, spread, cache)
}

// placeRow is placeRows for one float row x [B, h, 1, dim] on a backend without
// DynamicUpdateSlice (the pure-Go one): row at of every (batch, head) is set by two scatters
// that touch only that row — min(row, −Inf), then max(−Inf, x) — which is x exactly (a NaN in
// x too: the backend's max and min are Go's, which return NaN for a NaN operand; a NaN already
// in the row would stay NaN, but rows are written once per sequence and Reset zeroes the rows
// of the last one). The Where over the
// whole cache that it replaces read the cache, x and a condition broadcast to [B, h, S, dim]
// and wrote all of it: in the modern suite's decoding step (32 key/value heads, tails of 256
// positions) ~9 MB and 3 nodes for each of the 8 updates of a token, where the scatters, in
// the cache variable's own buffer when the step hands it over (context.Exec donates the
// variables it updates; fastgo's whole-row scatters then write in place), touch 2·B·h rows.
func placeRow(cache, x, at *Node) *Node {
	g := x.Graph()
	dims := cache.Shape().Dimensions
	B, h, dim := dims[0], dims[1], dims[3]
	base := make([][]int32, B*h) // [B·h, 3]: (b, head, 0)
	for i := range base {
		base[i] = []int32{int32(i / h), int32(i % h), 0}
	}
	index := Add(Const(g, base), Mul(Const(g, [][]int32{{0, 0, 1}}), at)) // [B·h, 3]: (b, head, at)
	negInf := BroadcastToDims(Infinity(g, x.DType(), -1), B*h, dim)       // [B·h, dim]
	cleared := ScatterMin(cache, index, negInf, true, true)               // [B, h, S, dim]: row at −Inf
	return ScatterMax(cleared, index, Reshape(x, B*h, dim), true, true)   // [B, h, S, dim]
}

// Attend computes attention of the new queries q [B, Hq, n, dk] over the whole cache (Hq a
// multiple of the cache's h heads: with grouped-query attention the cache keeps only the
// key/value heads, Hq/h times less memory),
// keys [B, h, maxLen, dk] and values [B, h, maxLen, dv] as returned by Append, with query i at
// position pos+i seeing positions 0 … pos+i (bottom-right causal alignment over pos+n positions).
// Logits are scaled by scale (use 1/√dk for the usual attention). It returns [B, Hq, n, dv].
func (c *KVCache) Attend(q, keys, values, pos *Node, scale float64) *Node {
	c.checkQuery(q)
	if pos == nil || !pos.IsScalar() || pos.DType() != dtypes.Int32 {
		panicArg("pos", "must be a scalar int32 node")
	}
	return attendAll(q, keys, values, pos, scale)
}

// attendAll is Attend over keys [B, h, S, dk] and values [B, h, S, dv] of any length S: query i
// of q [B, Hq, n, dk] at position pos+i sees positions 0 … pos+i. It returns [B, Hq, n, dv].
func attendAll(q, keys, values, pos *Node, scale float64) *Node {
	g := q.Graph()
	n, S := q.Shape().Dim(2), keys.Shape().Dim(2)
	logits := groupedScores(q, keys) // [B, Hq, n, S] (gqa.go: Hq may be a multiple of the cache's heads)
	logits = MulScalar(logits, scale)
	tile := shapes.Make(dtypes.Int32, 1, 1, n, S)
	i := Add(Iota(g, tile, 2), pos)                                                // [1, 1, n, S]: position of query i
	j := Iota(g, tile, 3)                                                          // [1, 1, n, S]: position of key j
	allowed := BroadcastToDims(causalSeesNode(i, j), logits.Shape().Dimensions...) // the causal rule (mask.go)
	logits = Where(allowed, logits, Scalar(g, logits.DType(), math.Inf(-1)))       // a scalar branch: the backend broadcasts it
	weights := safeSoftmax(logits)                                                 // [B, Hq, n, S]
	return groupedWeightedSum(weights, values)                                     // [B, Hq, n, dv]
}

// checkQuery validates new queries q [B, Hq, n, dk] against the cache: Hq may be a multiple of
// the cache's heads (grouped-query attention: the cache holds only the Hkv key/value heads).
func (c *KVCache) checkQuery(q *Node) {
	if q == nil {
		panicArg("q", "is nil")
	}
	d := q.Shape().Dimensions
	if len(d) != 4 || d[0] != c.batch || d[1] < c.heads || d[1]%c.heads != 0 || d[3] != c.keyDim || d[2] < 1 || d[2] > c.maxLen {
		panicArg("q", "shape %s: want [B=%d, Hq (a multiple of the cache's %d heads), n (1…maxLen=%d), %d] for this cache",
			q.Shape(), c.batch, c.heads, c.maxLen, c.keyDim)
	}
}

// CachedBuilder configures CachedSelfAttention; finish it with Done.
type CachedBuilder struct {
	ctx      *context.Context
	x, pos   *Node
	numHeads int
	cache    StepCache
	scope    string
	kvHeads  int // 0: numHeads
}

// CachedSelfAttention starts building one decoding step of multi-head self-attention:
//
//	x: [B, n, E] the n new positions   pos: scalar int32, the position of x's first row
//	→ [B, n, E]
//
// It equals MultiHeadAttention(ctx, X, X, X, numHeads).Causal(CausalTopLeft) evaluated at
// rows [pos, pos+n) of the whole sequence X so far, with the same variables (fused or separate
// projections, with or without bias, as the scope holds), while the keys and values of the
// earlier rows come from cache. The new keys and values are stored in the cache tensors in the
// sub-scope "kv_cache". With a WindowedKVCache, each row sees only the last Left+1 positions
// (MultiHeadAttention with Causal(CausalTopLeft) and that window). add_bias_kv and uneven heads
// are not supported.
func CachedSelfAttention(ctx *context.Context, x *Node, numHeads int, cache StepCache, pos *Node) *CachedBuilder {
	return &CachedBuilder{ctx: ctx, x: x, numHeads: numHeads, cache: cache, pos: pos, scope: DefaultScope}
}

// Scope sets the variable scope, under ctx's current scope, as MHABuilder.Scope.
// Default "MultiHeadAttention".
func (b *CachedBuilder) Scope(name string) *CachedBuilder {
	b.scope = name
	return b
}

// KVHeads sets the number of key/value heads, as MHABuilder.KVHeads: the cache then holds
// kvHeads heads (NewKVCache(B, kvHeads, …)), numHeads/kvHeads times less memory. Default numHeads.
func (b *CachedBuilder) KVHeads(n int) *CachedBuilder {
	b.kvHeads = n
	return b
}

// Done builds the step and returns the attention output [B, n, E].
func (b *CachedBuilder) Done() *Node {
	if c, ok := b.cache.(*WindowedKVCache); b.cache == nil || ok && c == nil {
		panicArg("cache", "is nil")
	}
	mha := MultiHeadAttention(b.ctx, b.x, b.x, b.x, b.numHeads).Scope(b.scope).KVHeads(b.kvHeads)
	d := mha.check()
	if c, ok := b.cache.(*KVCache); ok && c == nil {
		panicArg("cache", "is nil")
	} else if ok && (c.batch != d.batch || c.heads != d.kvHeads || c.keyDim != d.embed/b.numHeads || c.valueDim != c.keyDim) {
		panicArg("cache", "[B=%d, h=%d, maxLen=%d, dk=%d, dv=%d] does not fit x shape %s with %d heads (%d key/value heads)",
			c.batch, c.heads, c.maxLen, c.keyDim, c.valueDim, b.x.Shape(), b.numHeads, d.kvHeads)
	}
	ctx := b.ctx.In(b.scope)
	separate, useBias, addBiasKV := mha.resolveDefaults(ctx, d)
	if addBiasKV {
		panicArg("CachedSelfAttention", "scope %q has bias_k/bias_v: add_bias_kv is not supported with a KV cache", ctx.Scope())
	}
	init := initOf(ctx)
	dk := d.embed / b.numHeads
	kvWidth := d.kvHeads * dk                                                                   // E, or Hkv·dk
	q, k, v := inProjection(ctx, b.x, b.x, b.x, d.embed, kvWidth, separate, useBias, init)      // [B, n, E], [B, n, kvWidth] ×2
	qh, kh, vh := SplitHeads(q, b.numHeads), SplitHeads(k, d.kvHeads), SplitHeads(v, d.kvHeads) // [B, h, n, dk], [B, Hkv, n, dk] ×2
	out := b.cache.Step(ctx.In("kv_cache"), qh, kh, vh, b.pos, 1/math.Sqrt(float64(dk)))        // [B, h, n, dk]
	return outProjection(ctx, MergeHeads(out), d.embed, useBias, init)                          // [B, n, E]
}
