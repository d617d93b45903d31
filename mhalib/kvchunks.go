package mhalib

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// A KV cache in chunks: what KVCache.Step stores.
//
// A decoding step appends one key and one value per head. Stored as one [B, h, maxLen, d]
// tensor, that append rewrites the whole tensor on both backends: XLA returns every changed
// variable in a fresh buffer (GoMLX v0.26 declares no input/output aliasing, so the donated
// buffer is not reused), and the pure-Go backend, which has no DynamicUpdateSlice, selects with
// Where over every position. A profile of the modern suite's decoding step (4 layers, Hkv 32,
// 4096 positions) showed that copy dominating on both. So Step keeps the cache as C = ⌈maxLen/T⌉
// chunks of T positions, each its own variable:
//
//	keys_0 … keys_{C−2}   [B, h, T, dk]   chunks 0 … C−2, filled and never written by a one-token step
//	keys_tail             [B, h, T, dk]   the chunk being filled (also values_…, [B, h, T, dv])
//
// Chunk c holds positions [c·T, (c+1)·T). The tail holds the chunk of the last position written;
// the chunk variables hold the chunks before it. A one-token step at pos writes its key into the
// tail at pos − ⌊pos/T⌋·T (a copy of T positions, not maxLen) and attends over every chunk and
// the tail with one softmax over their concatenated logits [B, Hq, 1, C·T] — the keys are never
// concatenated. Positions after pos are masked, as in Attend.
//
// When a step begins a new chunk (pos a multiple of T), the tail is full: Advance, on the host,
// swaps the tensors of the tail and of chunk variable ⌊pos/T⌋−1 (no copy: the chunk variable's
// old tensor, stale, becomes the new tail). Step records the variables it creates for that, in
// every scope it is used in. A step of several tokens (a prompt) may span chunks: it assembles
// the whole cache [B, h, C·T, d] from the chunks, appends to it and attends as Attend does, then
// writes every chunk back (O(maxLen), once per prompt).
//
// T defaults to maxLen for maxLen ≤ 512 (one chunk: the tail is the whole cache) and otherwise
// to maxLen/C for the first C in 16 … 64 that divides maxLen (4096 → 16 chunks of 256), else
// ⌈maxLen/16⌉ (the last chunk then has room for C·T − maxLen positions Advance never hands out).
// SetChunkLen chooses another T.

// chunkSet is one scope's chunked cache: for keys (0) and values (1), the tail and the chunk
// variables 0 … C−2.
type chunkSet struct {
	tail   [2]*context.Variable
	chunks [2][]*context.Variable
}

// Cache variable names of Step's chunked layout, in the scope given to Step: VarCacheKeys +
// VarChunkTail, and VarCacheKeys + "_0", "_1", … for the filled chunks (also for values).
const VarChunkTail = "_tail"

// defaultChunkLen is T for a cache of maxLen positions (see above).
func defaultChunkLen(maxLen int) int {
	if maxLen <= 512 {
		return maxLen
	}
	for c := 16; c <= 64; c++ {
		if maxLen%c == 0 {
			return maxLen / c
		}
	}
	return (maxLen + 15) / 16
}

// ChunkLen is T, the positions per chunk of the layout Step uses (maxLen: one chunk).
func (c *KVCache) ChunkLen() int { return c.chunkLen }

// SetChunkLen sets T, the positions per chunk of Step's layout, 1 ≤ T ≤ maxLen. Call it before
// any step graph is built: it returns an *ArgumentError when T is out of range or Step has
// already created variables.
func (c *KVCache) SetChunkLen(T int) error {
	if T < 1 || T > c.maxLen {
		return &ArgumentError{Arg: "SetChunkLen", Msg: fmt.Sprintf("%d: want 1 … maxLen = %d", T, c.maxLen)}
	}
	if len(c.sets) > 0 {
		return &ArgumentError{Arg: "SetChunkLen", Msg: fmt.Sprintf("%d: Step has already created the cache variables (chunks of %d)", T, c.chunkLen)}
	}
	c.chunkLen = T
	return nil
}

// numChunks is C = ⌈maxLen/T⌉.
func (c *KVCache) numChunks() int { return (c.maxLen + c.chunkLen - 1) / c.chunkLen }

// rotate moves the full tail into its chunk variable before a step at pos that begins a new
// chunk (pos > 0 a multiple of T), in every scope Step was used in: the tensors of the tail and
// of chunk pos/T − 1 are swapped.
func (c *KVCache) rotate(pos int) {
	if pos == 0 || pos%c.chunkLen != 0 {
		return
	}
	i := pos/c.chunkLen - 1
	for _, s := range c.sets {
		for kv := range 2 {
			tail, chunk := s.tail[kv], s.chunks[kv][i]
			full, _ := tail.Value() // nil before the first run: then both are nil
			stale, _ := chunk.Value()
			_ = chunk.SetValuePreservingOld(full)
			_ = tail.SetValuePreservingOld(stale)
		}
	}
}

// chunkVars returns the chunked cache variables in ctx's scope for blocks k [B, h, n, dk] and
// v [B, h, n, dv], creating them as zeros (not trainable) and recording them for rotate.
func (c *KVCache) chunkVars(ctx *context.Context, k, v *Node) *chunkSet {
	s := &chunkSet{}
	for kv, x := range []struct {
		name string
		blk  *Node
	}{{VarCacheKeys, k}, {VarCacheValues, v}} {
		dims := x.blk.Shape().Clone().Dimensions
		dims[2] = c.chunkLen
		shape := shapes.Make(x.blk.DType(), dims...)
		get := func(name string) *context.Variable {
			variable := ctx.GetVariableByScopeAndName(ctx.Scope(), name)
			if variable == nil {
				variable = ctx.Checked(false).WithInitializer(zeroInit).VariableWithShape(name, shape)
				variable.Trainable = false
			} else if !variable.Shape().Equal(shape) {
				panicArg("cache variable "+ctx.Scope()+"/"+name, "holds shape %s, this cache needs %s (chunks of %d positions)", variable.Shape(), shape, c.chunkLen)
			}
			return variable
		}
		s.tail[kv] = get(x.name + VarChunkTail)
		for i := range c.numChunks() - 1 {
			s.chunks[kv] = append(s.chunks[kv], get(fmt.Sprintf("%s_%d", x.name, i)))
		}
	}
	for _, old := range c.sets {
		if old.tail[0] == s.tail[0] {
			return old
		}
	}
	c.sets = append(c.sets, s)
	return s
}

// Step stores k [B, h, n, dk] and v [B, h, n, dv] at positions [pos, pos+n) in ctx's scope
// (the chunked layout above) and attends q [B, Hq, n, dk] over the cache, query i seeing
// positions 0 … pos+i, logits scaled by scale; it returns [B, Hq, n, dv] (StepCache). One token
// (n = 1) writes only the tail; a block reassembles and rewrites every chunk.
func (c *KVCache) Step(ctx *context.Context, q, k, v, pos *Node, scale float64) *Node {
	c.checkBlock("k", k, c.keyDim)
	c.checkBlock("v", v, c.valueDim)
	if k.Shape().Dim(2) != v.Shape().Dim(2) {
		panicArg("v", "shape %s: %d positions, but k shape %s has %d", v.Shape(), v.Shape().Dim(2), k.Shape(), k.Shape().Dim(2))
	}
	c.checkQuery(q)
	if q.Shape().Dim(2) != k.Shape().Dim(2) {
		panicArg("q", "shape %s: %d positions, but k shape %s has %d", q.Shape(), q.Shape().Dim(2), k.Shape(), k.Shape().Dim(2))
	}
	if pos == nil || !pos.IsScalar() || pos.DType() != dtypes.Int32 {
		panicArg("pos", "must be a scalar int32 node")
	}
	s := c.chunkVars(ctx, k, v)
	if k.Shape().Dim(2) == 1 && differentiableSlices(q.Graph()) {
		return c.stepOneApart(s, q, k, v, pos, scale) // XLA (kvchunksapart.go)
	}
	if k.Shape().Dim(2) == 1 {
		return c.stepOne(s, q, k, v, pos, scale)
	}
	return c.stepBlock(s, q, k, v, pos, scale)
}

// stepOne is Step for one token: it writes k [B, h, 1, dk] and v [B, h, 1, dv] into the tail
// and attends q [B, Hq, 1, dk] over the chunks before ⌊pos/T⌋ and the tail up to pos.
func (c *KVCache) stepOne(s *chunkSet, q, k, v, pos *Node, scale float64) *Node {
	g := q.Graph()
	T, C := c.chunkLen, c.numChunks()
	t := Div(pos, Scalar(g, dtypes.Int32, T)) // the chunk of pos
	off := Sub(pos, MulScalar(t, float64(T))) // pos's row in the tail
	tails := [2]*Node{}
	for kv, x := range []*Node{k, v} {
		tails[kv] = placeRows(s.tail[kv].ValueGraph(g), x, off) // [B, h, T, d]
		s.tail[kv].SetValueGraph(tails[kv])
	}
	qs := MulScalar(q, scale) // [B, Hq, 1, dk]: scaled before the products, not the C·T logits after
	parts := make([]*Node, 0, C)
	for i := range C - 1 {
		parts = append(parts, groupedScores(qs, s.chunks[0][i].ValueGraph(g))) // [B, Hq, 1, T]
	}
	parts = append(parts, groupedScores(qs, tails[0]))         // [B, Hq, 1, T]
	raw := Concatenate(parts, 3)                               // [B, Hq, 1, C·T]
	col := Iota(g, shapes.Make(dtypes.Int32, 1, 1, 1, C*T), 3) // [1, 1, 1, C·T]
	first := Scalar(g, dtypes.Int32, (C-1)*T)                  // the tail's first column
	inChunks := LessThan(col, first)
	seen := Where(inChunks, LessThan(col, MulScalar(t, float64(T))), LessOrEqual(Sub(col, first), off)) // [1, 1, 1, C·T]
	// The mask as an additive 0/−inf bias over one row, broadcast by Add itself (no [B, Hq, 1,
	// C·T] mask is materialised), and the plain softmax: position pos is always seen, so no row
	// is fully masked, and its autodiff gives the masked logits the gradient 0 (exp(−inf) = 0)
	// without safeSoftmax's custom gradient, whose identities and zero sum are, on the pure-Go
	// backend, copies and passes over the logits (a profile of the modern decode step: with
	// the Where mask, its broadcast and making the masked logits finite again, nine a layer).
	bias := Where(seen, ScalarZero(g, raw.DType()), Scalar(g, raw.DType(), math.Inf(-1))) // [1, 1, 1, C·T]
	// The weights unnormalised, e = exp(logits − max), and the sum of each row divided out of
	// the output [B, Hq, 1, dv] at the end instead of out of the C·T weights (softmaxValues' Div,
	// a pass over [B, Hq, 1, C·T]), as softmaxSum does.
	weights, sum := softmaxParts(Add(raw, bias)) // [B, Hq, 1, C·T], [B, Hq, 1, 1]
	var out *Node
	for i := range C {
		w := Slice(weights, AxisRange(), AxisRange(), AxisRange(), AxisRange(i*T, (i+1)*T)) // [B, Hq, 1, T]
		vals := tails[1]
		if i < C-1 {
			vals = s.chunks[1][i].ValueGraph(g)
		}
		o := groupedWeightedSum(w, vals) // [B, Hq, 1, dv]
		if out == nil {
			out = o
		} else {
			out = Add(out, o)
		}
	}
	return Div(out, sum) // [B, Hq, 1, dv]
}

// stepBlock is Step for n positions that may span chunks: it assembles the cache
// [B, h, C·T, d] (chunk ⌊pos/T⌋ from the tail), appends k [B, h, n, dk] and v [B, h, n, dv] at
// pos, attends q [B, Hq, n, dk] over it (Attend), and writes every chunk back, the chunk of
// pos+n−1 into the tail.
func (c *KVCache) stepBlock(s *chunkSet, q, k, v, pos *Node, scale float64) *Node {
	g := q.Graph()
	T, C := c.chunkLen, c.numChunks()
	n := k.Shape().Dim(2)
	t := Div(pos, Scalar(g, dtypes.Int32, T))                             // the tail's chunk now
	last := Div(AddScalar(pos, float64(n-1)), Scalar(g, dtypes.Int32, T)) // the tail's chunk after the step
	var whole [2]*Node
	for kv, x := range []*Node{k, v} {
		tail := s.tail[kv].ValueGraph(g)
		pieces := make([]*Node, C)
		for i := range C - 1 {
			pieces[i] = Where(BroadcastToDims(Equal(t, Scalar(g, dtypes.Int32, i)), tail.Shape().Dimensions...), tail, s.chunks[kv][i].ValueGraph(g))
		}
		pieces[C-1] = tail // chunk C−1 lives only in the tail
		all := pieces[0]
		if C > 1 {
			all = Concatenate(pieces, 2) // [B, h, C·T, d]
		}
		whole[kv] = placeRows(all, x, pos)
		next := Slice(whole[kv], AxisRange(), AxisRange(), AxisRange((C-1)*T, C*T)) // [B, h, T, d]
		for i := C - 2; i >= 0; i-- {
			chunk := Slice(whole[kv], AxisRange(), AxisRange(), AxisRange(i*T, (i+1)*T)) // [B, h, T, d]
			s.chunks[kv][i].SetValueGraph(chunk)
			next = Where(BroadcastToDims(Equal(last, Scalar(g, dtypes.Int32, i)), chunk.Shape().Dimensions...), chunk, next)
		}
		s.tail[kv].SetValueGraph(next)
	}
	return attendAll(q, whole[0], whole[1], pos, scale)
}
