package mhalib

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// A KV cache for sliding-window attention: a ring buffer.
//
// With a window of Left keys before the query (causal: query at position p sees p − Left … p),
// no query ever looks further back than Left positions, so the cache needs only the last
// W = Left + 1 positions, whatever the length of the sequence: memory O(W) instead of O(length).
// Position p lives in slot p mod W, overwriting position p − W, which no later query sees.
//
//	keys   [B, Hkv, W, dk]    values [B, Hkv, W, dv]    (non-trainable variables, as KVCache)
//
// A step with n new positions at pos attends over the ring as it was before the step (slot s
// holds position pos−1 − ((pos−1−s) mod W), when that is ≥ 0) together with the n new keys, so
// that a prefill longer than the window still sees every key its window needs — one softmax
// over the logits of both parts, without concatenating the keys; only then are the new keys
// written into the ring (the last W of them, if n > W). One token goes into slot pos mod W with
// DynamicUpdateSlice where the backend has it (Where on the pure-Go backend); a block uses a
// one-hot matrix product and Where. Either way the ring is returned as a new tensor, O(W) per
// step (GoMLX v0.26 declares no input/output aliasing on XLA): KVCache's chunks (kvchunks.go)
// avoid that for long caches; a window is usually short.

// WindowedKVCache is a ring-buffer KV cache for causal sliding-window attention over the last
// Left+1 positions. Create it with NewWindowedKVCache.
type WindowedKVCache struct {
	batch, heads, left, keyDim, valueDim int
	length                               int
	vars                                 []*context.Variable // the rings of every scope, for Reset
}

// NewWindowedKVCache returns an empty ring of W = left+1 slots for keys [batch, heads, W, keyDim]
// and values [batch, heads, W, valueDim] (heads: the key/value heads; queries may have a multiple
// of them). It returns an *ArgumentError if left < 0 or a dimension is not positive.
func NewWindowedKVCache(batch, heads, left, keyDim, valueDim int) (*WindowedKVCache, error) {
	if batch < 1 || heads < 1 || left < 0 || keyDim < 1 || valueDim < 1 {
		return nil, &ArgumentError{Arg: "NewWindowedKVCache", Msg: fmt.Sprintf(
			"batch=%d, heads=%d, left=%d, keyDim=%d, valueDim=%d: want left ≥ 0 and the others positive", batch, heads, left, keyDim, valueDim)}
	}
	return &WindowedKVCache{batch: batch, heads: heads, left: left, keyDim: keyDim, valueDim: valueDim}, nil
}

// Slots is the ring's size W = left + 1, the most positions it ever keeps.
func (c *WindowedKVCache) Slots() int { return c.left + 1 }

// Len is the number of positions seen so far (they are not all kept).
func (c *WindowedKVCache) Len() int { return c.length }

// Reset starts a new sequence and sets the rings of every scope the cache was used in back to
// zero (kvreset.go), so that a NaN or ±Inf of the last sequence cannot reach a masked slot's
// zero weight.
func (c *WindowedKVCache) Reset() {
	if c.length > 0 {
		zeroVariables(c.vars)
	}
	c.length = 0
}

// Advance reserves the next n positions and returns the first, pos (feed it as a scalar int32
// to Step). There is no capacity limit: the ring forgets what the window no longer needs.
func (c *WindowedKVCache) Advance(n int) (pos int, err error) {
	if n < 1 {
		return 0, &ArgumentError{Arg: "n", Msg: fmt.Sprintf("%d: Advance needs at least one position", n)}
	}
	pos = c.length
	c.length += n
	return pos, nil
}

// Step attends the new queries q [B, Hq, n, dk] (positions pos … pos+n−1) over the window of
// the sequence so far — the ring's keys plus the new k [B, h, n, dk], v [B, h, n, dv] — with
// causal sliding-window masking (position p sees p − left … p), logits scaled by scale; then it
// writes k and v into the ring (variables "keys" and "values" in ctx's scope). It returns
// [B, Hq, n, dv]. pos is a scalar int32 node.
func (c *WindowedKVCache) Step(ctx *context.Context, q, k, v, pos *Node, scale float64) *Node {
	W := c.Slots()
	for _, x := range []struct {
		name     string
		n        *Node
		minHeads int
		dim      int
	}{{"k", k, c.heads, c.keyDim}, {"v", v, c.heads, c.valueDim}, {"q", q, c.heads, c.keyDim}} {
		if x.n == nil {
			panicArg(x.name, "is nil")
		}
		d := x.n.Shape().Dimensions
		if len(d) != 4 || d[0] != c.batch || d[1]%c.heads != 0 || d[1] < c.heads || (x.name != "q" && d[1] != c.heads) || d[3] != x.dim ||
			d[2] != k.Shape().Dim(2) {
			panicArg(x.name, "shape %s: want [B=%d, %d heads (q: a multiple), n = k's positions, %d] for this cache", x.n.Shape(), c.batch, c.heads, x.dim)
		}
	}
	if pos == nil || !pos.IsScalar() || pos.DType() != dtypes.Int32 {
		panicArg("pos", "must be a scalar int32 node")
	}
	g, dt := q.Graph(), q.DType()
	n := q.Shape().Dim(2)
	ringK := c.ring(ctx, VarCacheKeys, c.keyDim, dt, g)     // [B, h, W, dk]
	ringV := c.ring(ctx, VarCacheValues, c.valueDim, dt, g) // [B, h, W, dv]

	// 1) Positions: the ring's slots before this step [W], the new rows [n].
	s := Iota(g, shapes.Make(dtypes.Int32, W), 0)                                         // [W]: slot
	last := Sub(pos, Scalar(g, dtypes.Int32, 1))                                          // the newest position in the ring
	age := Mod(Add(Sub(last, s), Scalar(g, dtypes.Int32, W)), Scalar(g, dtypes.Int32, W)) // (last − s) mod W, ≥ 0
	ringPos := Sub(last, age)                                                             // [W]: position in slot s (< 0: empty)
	newPos := Add(Iota(g, shapes.Make(dtypes.Int32, n), 0), pos)                          // [n]

	// 2) Scores over the ring and over the new keys, masked, one softmax over both: key position
	// kp is seen by query position qp iff 0 ≤ kp, qp − left ≤ kp ≤ qp. The keys are not
	// concatenated (a copy of the ring per step); their logits [B, Hq, n, W+n] are.
	oldK, oldV := ringK.ValueGraph(g), ringV.ValueGraph(g) // [B, h, W, dk], [B, h, W, dv]
	qp := Reshape(newPos, 1, 1, n, 1)                      // [1, 1, n, 1]
	masked := func(logits, keyPos *Node) *Node {           // logits [B, Hq, n, m], keyPos [m]
		m := keyPos.Shape().Dim(0)
		kp := BroadcastToDims(Reshape(keyPos, 1, 1, 1, m), 1, 1, n, m)
		qpb := BroadcastToDims(qp, 1, 1, n, m)
		ok := LogicalAnd(LogicalAnd(GreaterOrEqual(kp, ZerosLike(kp)), causalSeesNode(qpb, kp)),
			GreaterOrEqual(kp, AddScalar(qpb, float64(-c.left)))) // [1, 1, n, m]
		dims := logits.Shape().Dimensions
		return Where(BroadcastToDims(ok, dims...), logits, Scalar(g, dt, math.Inf(-1))) // a scalar branch: the backend broadcasts it
	}
	logits := Concatenate([]*Node{
		masked(MulScalar(groupedScores(q, oldK), scale), ringPos), // [B, Hq, n, W]
		masked(MulScalar(groupedScores(q, k), scale), newPos),     // [B, Hq, n, n]
	}, 3)
	weights := safeSoftmax(logits) // [B, Hq, n, W+n]
	out := Add(groupedWeightedSum(Slice(weights, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, W)), oldV),
		groupedWeightedSum(Slice(weights, AxisRange(), AxisRange(), AxisRange(), AxisRange(W, W+n)), v)) // [B, Hq, n, dv]

	// 3) Write the new keys into the ring. One row: into slot pos mod W (placeRows:
	// DynamicUpdateSlice where the backend has it). Several: slot s takes new row i when
	// (pos+i) mod W = s and i is among the last W rows.
	if n == 1 {
		slot := Mod(pos, Scalar(g, dtypes.Int32, W))
		ringK.SetValueGraph(placeRows(oldK, k, slot))
		ringV.SetValueGraph(placeRows(oldV, v, slot))
		return out
	}
	i := Iota(g, shapes.Make(dtypes.Int32, W, n), 1)                                                                              // [W, n]
	slot := Mod(AddScalar(Add(i, pos), 0), Scalar(g, dtypes.Int32, W))                                                            // [W, n]: (pos+i) mod W
	take := LogicalAnd(Equal(slot, Iota(g, shapes.Make(dtypes.Int32, W, n), 0)), GreaterOrEqual(i, Scalar(g, dtypes.Int32, n-W))) // [W, n]
	onehot := ConvertDType(take, dt)                                                                                              // [W, n]
	written := ReduceAndKeep(onehot, ReduceMax, 1)                                                                                // [W, 1]: 1 where a slot is rewritten
	for _, r := range []struct {
		v   *context.Variable
		new *Node
	}{{ringK, k}, {ringV, v}} {
		old := r.v.ValueGraph(g)                                                                        // [B, h, W, d]
		placed := TransposeAllDims(DotGeneral(r.new, []int{2}, nil, onehot, []int{1}, nil), 0, 1, 3, 2) // [B, h, W, d]
		cond := BroadcastToDims(Reshape(GreaterThan(written, ZerosLike(written)), 1, 1, W, 1), old.Shape().Dimensions...)
		r.v.SetValueGraph(Where(cond, placed, old))
	}
	return out
}

// ring returns the ring variable name [B, h, W, dim] in ctx's scope, created as zeros.
func (c *WindowedKVCache) ring(ctx *context.Context, name string, dim int, dt dtypes.DType, g *Graph) *context.Variable {
	shape := shapes.Make(dt, c.batch, c.heads, c.Slots(), dim)
	v := ctx.GetVariableByScopeAndName(ctx.Scope(), name)
	if v == nil {
		v = ctx.Checked(false).WithInitializer(zeroInit).VariableWithShape(name, shape)
		v.Trainable = false
	} else if !v.Shape().Equal(shape) {
		panicArg("cache variable "+ctx.Scope()+"/"+name, "holds shape %s, this cache needs %s", v.Shape(), shape)
	}
	c.vars = recordVariable(c.vars, v)
	return v
}
