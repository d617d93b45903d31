package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Flash-style attention: the forward pass of FlashAttention-2 (Dao 2023, algorithm 1), which
// never holds the whole [Lq, Lk] matrix of scores.
//
// The keys and values are cut into blocks of BlockK keys, visited one after another. For every
// query row three running quantities replace the full row of weights:
//
//	m    running maximum of the logits seen so far       [B, h, Lq, 1], starts at −inf
//	l    running Σ_j exp(s_j − m)                        [B, h, Lq, 1], starts at 0
//	acc  running Σ_j exp(s_j − m)·v_j                    [B, h, Lq, dv], starts at 0
//
// For the next key block, with logits s = q·k_blockᵀ·scale + masks  [B, h, Lq, BlockK]:
//
//	m_new = max(m, max_j s_j)
//	α     = exp(m − m_new)        rescales what was summed under the old maximum
//	p     = exp(s − m_new)        [B, h, Lq, BlockK]
//	l     = α·l   + Σ_j p_j
//	acc   = α·acc + p·v_block
//
// and at the end output = acc / l and lse = m + log l (the log-sum-exp of each row of logits,
// what a backward pass needs to recompute the weights). mhatest.OnlineSoftmaxAttention is the
// same recurrence in float64 loops.
//
// # Blocks in a graph without loops
//
// GoMLX has no While, so the loop over key blocks is unrolled when the graph is built: the
// graph holds ⌈Lk/BlockK⌉ copies of the step above, and its size grows with Lk/BlockK.
// Queries are cut into blocks of BlockQ rows, and all query blocks that still need keys are
// processed together, batched, as one matrix of rows: a step multiplies [B, h, rows, dk] by
// [B, h, BlockK, dk]ᵀ. Memory for the scores is therefore O(Lq·BlockK) instead of O(Lq·Lk).
// Two details of the graph: l is not kept apart but as the last column of acc (v gets a column
// of ones, so one product p·[v | 1] gives Σ p·v and Σ p), and each step is tied to the previous
// one (see flashRows.after) so that XLA cannot compute every block's scores up front. At
// B = 1, h = 8, L = 32768 in float32 one tile of scores is 8·L·BlockK·4 B = 128 MiB where plain
// attention would need 32 GiB for one copy of the scores; `mhalab bench` measures the time and
// peak memory of both (the README's tables).
//
// With a causal mask, key block j is visible only to query blocks whose last row reaches it;
// because the key blocks are visited in order, the query blocks that need no more keys are a
// prefix of the rows. After each step that prefix is finished (output = acc/l) and dropped, so
// the steps work on fewer and fewer rows: tiles entirely above the diagonal are never computed,
// and the causal mask is applied only to tiles that cross the diagonal. Other masks (attention
// masks of every shape mhalib accepts, key padding masks, additive masks) are cut into the same
// tiles.
//
// # Gradients
//
// The gradient is FlashAttention-2's backward pass (flashgrad.go): it recomputes the tiles of
// weights from q, k and the log-sum-exp the forward pass keeps, so training needs O(L) memory
// too. On backends that cannot differentiate Slice and
// Concatenate (the pure-Go backend has no Pad), rows and blocks are selected with Gather and
// joined with Where, which every backend differentiates (sliceAxis and concatAxis, take.go).
//
// Dropout of the attention weights is not supported here (use ScaledDotProductAttention).

// Default block sizes of FlashAttention.
const (
	DefaultFlashBlockQ = 512
	DefaultFlashBlockK = 128
)

// FlashBuilder configures FlashAttention; finish it with Done or DoneWithLSE. Its options are
// AttentionOptions' (shared with ScaledDotProductAttention and MultiHeadAttention; Dropout is
// refused), EnableGQA and BlockSizes.
type FlashBuilder struct {
	AttentionOptions[*FlashBuilder]
	GQAOption[*FlashBuilder]
	q, k, v        *Node
	blockQ, blockK int
	blocksSet      bool // BlockSizes was called
}

// FlashAttention starts building softmax(q·kᵀ·scale + mask)·v block by block (see the
// description above), with the same arguments and options as ScaledDotProductAttention:
//
//	q: [B, h, Lq, dk]   k: [B, h, Lk, dk]   v: [B, h, Lk, dv]
//
// Finish with Done (output [B, h, Lq, dv]) or DoneWithLSE (also the log-sum-exp [B, h, Lq]).
// It never returns the weights: not materialising them is the point.
func FlashAttention(q, k, v *Node) *FlashBuilder {
	b := &FlashBuilder{q: q, k: k, v: v, blockQ: DefaultFlashBlockQ, blockK: DefaultFlashBlockK}
	b.AttentionOptions = newAttentionOptions(b)
	b.GQAOption = GQAOption[*FlashBuilder]{builder: b, on: &b.cfg.gqa}
	return b
}

// BlockSizes sets the number of query rows per query block (the granularity at which causal
// attention drops finished rows) and the number of keys per key block (one unrolled step each).
// Neither needs to divide the lengths. Defaults DefaultFlashBlockQ and DefaultFlashBlockK.
// Larger key blocks mean fewer unrolled steps but larger score tiles; larger causal query blocks
// mean fewer distinct shapes to compile (every step that drops rows has new ones) for more
// masked work. Measure a change with `mhalab bench` (its flash rows).
func (b *FlashBuilder) BlockSizes(blockQ, blockK int) *FlashBuilder {
	b.blockQ, b.blockK, b.blocksSet = blockQ, blockK, true
	return b
}

// Done builds the attention and returns the output [B, h, Lq, dv], equal to
// ScaledDotProductAttention's output for the same options (up to rounding).
// It panics with an *ArgumentError for inconsistent shapes, dtypes or block sizes.
func (b *FlashBuilder) Done() *Node {
	out, _ := b.build(false)
	return out
}

// DoneWithLSE builds the attention and returns the output [B, h, Lq, dv] and the
// log-sum-exp of each row of masked, scaled logits, lse [B, h, Lq] (−inf for a row whose
// every key is blocked with −inf).
func (b *FlashBuilder) DoneWithLSE() (output, lse *Node) {
	return b.build(true)
}

// flashRows is the state of the rows still being computed: rows [first, Lq) of every head.
type flashRows struct {
	first, end   int // rows [first, end) are being computed
	batch, heads int // B, Hq
	dtype        dtypes.DType
	sinks        *Node // [Hq] sink logits, or nil
	graph        *Graph
	m            *Node // running maxima [B, h, rows, 1]
	acc          *Node // [B, h, rows, dv+1]: Σ p·v in the first dv columns, l = Σ p in the last
	dv           int
	outs         []*Node // finished rows' outputs, in order, [B, h, n_i, dv]
	lses         []*Node // finished rows' log-sum-exps, [B, h, n_i, 1], when asked for
	withL        bool
	token        *Node // one entry of the previous step's accumulator, or nil
	qFirst       int   // the first row of the query rows last sliced (flashQueryRows)
	// inPlace: finished rows are written into out [B, h, Lq, dv] and lse [B, h, Lq, 1] with
	// DynamicUpdateSlice as they finish, instead of appended to outs and lses (flashSteps on
	// XLA; see "XLA's block of temporaries" in flashxla.go).
	inPlace  bool
	out, lse *Node
}

// after returns x made to depend on the previous step: x + 0·token.
//
// Nothing in the recurrence itself forces the steps to run one after another: every block's
// scores depend only on q and that block, and the accumulator update is a chain of element-wise
// operations. XLA's CPU compiler takes advantage of that: it fuses the whole chain
// acc ← α·acc + p·v into one final loop that reads every block's p·v, so all ⌈Lk/BlockK⌉ of
// them (and the score tiles scheduled early) are alive at once, and memory grows with Lk again.
// GoMLX has no optimisation barrier, so the next block's keys get a zero
// term computed from the current accumulator: the accumulator must then be materialised
// before the next block's scores, and at most about two score tiles are alive. The term is
// exact (the token is finite) and costs one multiply-add per key of the block.
//
// The token must be finite: 0·NaN and 0·Inf are NaN, so a NaN or Inf in one batch element or
// head would otherwise spread to every other one (flashToken replaces it by 0).
func (st *flashRows) after(x *Node) *Node {
	if st.token == nil {
		return x
	}
	zero := MulScalar(BroadcastToDims(st.token, x.Shape().Dimensions...), 0)
	return Add(x, zero)
}

// flashFinishInPlace: flashSteps writes finished rows in place (flashRows.inPlace). Only the
// A/B test of flashxla.go's note sets it to false.
var flashFinishInPlace = true

// flashToken is the dependency token of the next step: acc[0, 0, 0, 0] as a scalar, replaced
// by 0 when it is not finite (so that 0·token is exactly 0), without gradient.
func flashToken(acc *Node) *Node {
	t := Reshape(sliceAxis(sliceAxis(sliceAxis(sliceAxis(acc, 0, 0, 1), 1, 0, 1), 2, 0, 1), 3, 0, 1)) // acc[0,0,0,0], scalar
	return StopGradient(Where(IsFinite(t), t, ZerosLike(t)))
}

func (b *FlashBuilder) build(withLSE bool) (output, lse *Node) {
	ms, scale := b.cfg.prepare(b.q, b.k, b.v)
	if b.cfg.dropout.rate > 0 {
		panicArg("Dropout", "rate %g: FlashAttention never forms the weights, so it cannot drop them (use ScaledDotProductAttention)", b.cfg.dropout.rate)
	}
	if b.blockQ < 1 || b.blockK < 1 {
		panicArg("BlockSizes", "blockQ=%d, blockK=%d: both must be ≥ 1", b.blockQ, b.blockK)
	}
	blockQ, blockK := b.blockQ, b.blockK
	if !b.blocksSet {
		blockQ, blockK = xlaFlashBlocks(b.q.Graph(), ms, blockQ, blockK)
	}
	return flashAttendGrad(b.q, b.k, b.v, scale, ms, blockQ, blockK, withLSE)
}

// flashAttend is FlashAttention on validated inputs q [B, Hq, Lq, dk], k [B, Hkv, Lk, dk],
// v [B, Hkv, Lk, dv] (Hkv = Hq, or a divisor of it with GQA), with masks ms (whose keys beyond
// ms.causalLk, added by add_bias_kv or add_zero_attn, are visible to every query): output
// [B, Hq, Lq, dv] and, if withLSE, lse [B, Hq, Lq].
//
// The rows being computed are a contiguous range [first, end) of query blocks: a block enters
// when some of its rows sees a key of the current key block (with a window, rows whose window
// starts later wait), and leaves, finished, when none of its rows sees a key from the current
// block on (causal or window). Tiles outside that range — above the causal diagonal, or outside
// the window on either side — are never computed.
func flashAttend(qIn, k, v *Node, scale float64, ms *maskSet, blockQ, blockK int, withLSE bool) (output, lse *Node) {
	hkv := k.Shape().Dim(1)
	g := qIn.Graph()
	if flashByRowsFits(g, ms, hkv) {
		return flashByRows(qIn, k, v, scale, ms, blockQ, withLSE) // the pure-Go backend's path (flashrows.go)
	}
	if !differentiableSlices(g) {
		return flashByBlocks(qIn, k, v, scale, ms, blockQ, blockK, withLSE) // the pure-Go backend, other masks (flashblocks.go)
	}
	if n := xlaFlashChains(g, hkv, (ms.lk+blockK-1)/blockK); n > 1 {
		return flashChains(qIn, k, v, scale, ms, blockQ, blockK, withLSE, n) // independent chains on XLA (flashxla.go)
	}
	return flashSteps(qIn, k, v, scale, ms, blockQ, blockK, withLSE)
}

// flashSteps is flashAttend's unrolled chain of steps over the key blocks (same arguments and
// results), on backends that differentiate slices (XLA).
func flashSteps(qIn, k, v *Node, scale float64, ms *maskSet, blockQ, blockK int, withLSE bool) (output, lse *Node) {
	batch, heads, lq, lk := ms.batch, ms.heads, ms.lq, ms.lk
	hkv := k.Shape().Dim(1)
	g := qIn.Graph()
	dtype := qIn.DType()
	dv := v.Shape().Dim(-1)

	// q is scaled once (cheaper than scaling every tile of scores). v gets a column of ones, so
	// that p·[v | 1] gives Σ p·v and the row sums l = Σ p from one matrix product.
	q := MulScalar(qIn, scale)                                                   // [B, Hq, Lq, dk]
	ones := Ones(g, shapes.Make(dtype, batch, hkv, lk, 1))                       // [B, Hkv, Lk, 1]
	v1 := concatAxis([]*Node{v, ones}, 3)                                        // [B, Hkv, Lk, dv+1]
	qs, ks, vs := newAxisSlicer(q, 2), newAxisSlicer(k, 2), newAxisSlicer(v1, 2) // one transpose each where Gather slices
	st := &flashRows{dv: dv, withL: withLSE, batch: batch, heads: heads, dtype: dtype, sinks: ms.sinks, graph: g}
	if flashFinishInPlace {
		st.inPlace = true
		st.out = Zeros(g, shapes.Make(dtype, batch, heads, lq, dv)) // [B, Hq, Lq, dv]
		if withLSE {
			st.lse = Zeros(g, shapes.Make(dtype, batch, heads, lq, 1)) // [B, Hq, Lq, 1]
		}
	}

	// The schedule of tiles (host integers only, flashPlan): which rows meet which key block.
	var qa *Node // the query rows of the previous step, reused while they stay the same (XLA)
	for _, t := range ms.flashPlan(blockQ, blockK) {
		if t.Row0 > st.first {
			st.enter(t.Row0) // rows that never saw a key get the empty state (output 0)
			st.finish(t.Row0 - st.first)
		}
		st.enter(t.Row1)
		c0, cols, rows := t.Col0, t.Col1-t.Col0, t.Row1-t.Row0
		qa = flashQueryRows(qa, qs, st, rows, lq) // [B, Hq, rows, dk]
		kb := st.after(ks.slice(c0, cols))        // [B, Hkv, cols, dk]
		vb := vs.slice(c0, cols)                  // [B, Hkv, cols, dv+1]
		st.step(qa, kb, vb, ms, c0)
	}
	st.enter(lq)
	if st.first < lq {
		st.finish(lq - st.first)
	}
	if st.inPlace {
		if withLSE {
			lse = Reshape(st.lse, batch, heads, lq) // [B, Hq, Lq]
		}
		return st.out, lse
	}
	output = concatAxis(st.outs, 2) // [B, Hq, Lq, dv]
	if withLSE {
		lse = Reshape(concatAxis(st.lses, 2), batch, heads, lq) // [B, Hq, Lq]
	}
	return output, lse
}

// step adds key block [c0, c0+cols) to the rows being computed, [first, end) of every head:
// qa [B, Hq, rows, dk] their scaled queries, kb [B, Hkv, cols, dk] and vb [B, Hkv, cols, dv+1]
// the block's keys and values (with the column of ones), under the masks ms.
func (st *flashRows) step(qa, kb, vb *Node, ms *maskSet, c0 int) {
	g, batch, heads, dv := st.graph, st.batch, st.heads, st.dv
	rows, cols := qa.Shape().Dim(2), kb.Shape().Dim(2)
	causal := ms.causal

	// 1) Scores of the tile (each query head against its key head), masked.
	s := groupedScores(qa, kb) // [B, Hq, rows, cols]
	tileMasks := ms
	if causal != NoCausal && causalSees(ms.queryPosition(st.first), c0+cols-1) && c0+cols <= ms.causalLk {
		// The whole tile is on or below the diagonal: no causal mask needed.
		noCausal := *ms
		noCausal.causal = NoCausal
		tileMasks = &noCausal
	}
	raw := s
	if st.token != nil && !differentiableSlices(g) {
		waiting := *tileMasks
		waiting.token = st.token // the pure-Go backend: the tile's masks wait for the previous step (maskSet.token)
		tileMasks = &waiting
	}
	s = tileMasks.apply(s, st.first, c0) // [B, Hq, rows, cols]

	// 2) New running maximum; m stays −inf while every key so far is blocked with −inf,
	// and exponents use mSafe = 0 then (every term is 0 anyway).
	mNew := StopGradient(Max(st.m, flashTileMax(raw, s, tileMasks, st.first, c0))) // [B, Hq, rows, 1]
	mSafe := Where(IsFinite(mNew), mNew, ZerosLike(mNew))                          // [B, Hq, rows, 1]

	// 3) Rescale what was accumulated, add this block.
	alpha := Exp(Sub(st.m, mSafe))                                                  // [B, Hq, rows, 1], 0 while m = −inf
	p := Exp(Sub(s, BroadcastToDims(mSafe, batch, heads, rows, cols)))              // [B, Hq, rows, cols]
	pv := groupedWeightedSum(p, vb)                                                 // [B, Hq, rows, dv+1]
	st.acc = Add(Mul(BroadcastToDims(alpha, batch, heads, rows, dv+1), st.acc), pv) // [B, Hq, rows, dv+1]
	st.m = mNew
	st.token = flashToken(st.acc)
}

// enter lets rows [end, to) into the computation with the empty state: m = −inf and acc = 0 —
// or, with sinks, the sink's term already counted: m = sink_h and l = exp(sink_h − m) = 1 (the
// exponent keeps the gradient to the sink; m is a constant for it).
func (st *flashRows) enter(to int) {
	n := to - st.end
	if n <= 0 {
		return
	}
	g := st.graph
	var m, l *Node // [B, Hq, n, 1]
	if st.sinks != nil {
		sink := BroadcastToDims(Reshape(st.sinks, 1, st.heads, 1, 1), st.batch, st.heads, n, 1)
		m = StopGradient(sink)
		l = Exp(Sub(sink, m))
	} else {
		m = BroadcastToDims(Scalar(g, st.dtype, math.Inf(-1)), st.batch, st.heads, n, 1)
		l = Zeros(g, shapes.Make(st.dtype, st.batch, st.heads, n, 1))
	}
	acc := concatAxis([]*Node{Zeros(g, shapes.Make(st.dtype, st.batch, st.heads, n, st.dv)), l}, 3) // [B, Hq, n, dv+1]
	if st.acc == nil {
		st.m, st.acc = m, acc
	} else {
		st.m, st.acc = concatAxis([]*Node{st.m, m}, 2), concatAxis([]*Node{st.acc, acc}, 2)
	}
	st.end = to
}

// finish computes output = acc/l (0 where l = 0) and lse = m + log l for the first n remaining
// rows and drops them from the state.
func (st *flashRows) finish(n int) {
	rows := st.acc.Shape().Dim(2)
	take := func(x *Node) (head, rest *Node) {
		rowsOf := newAxisSlicer(x, 2) // one transpose of x for both parts where Gather slices
		head = rowsOf.slice(0, n)
		if n < rows {
			rest = rowsOf.slice(n, rows-n)
		}
		return
	}
	acc, accRest := take(st.acc)      // [B, h, n, dv+1]
	l := sliceAxis(acc, 3, st.dv, 1)  // [B, h, n, 1]
	acc = sliceAxis(acc, 3, 0, st.dv) // [B, h, n, dv]
	empty := Equal(l, ZerosLike(l))
	lSafe := Where(empty, OnesLike(l), l)
	out := Div(acc, BroadcastToDims(lSafe, acc.Shape().Dimensions...)) // [B, h, n, dv]
	var at []*Node                                                     // where the rows go in out and lse, when in place
	if st.inPlace {
		zero := Scalar(st.graph, dtypes.Int32, 0)
		at = []*Node{zero, zero, Scalar(st.graph, dtypes.Int32, st.first), zero}
		st.out = DynamicUpdateSlice(st.out, out, at) // [B, h, Lq, dv]
	} else {
		st.outs = append(st.outs, out)
	}
	var mRest *Node
	if st.withL {
		var m *Node
		m, mRest = take(st.m) // [B, h, n, 1]
		negInf := BroadcastToDims(Scalar(l.Graph(), l.DType(), math.Inf(-1)), l.Shape().Dimensions...)
		lse := Where(empty, negInf, Add(m, Log(lSafe))) // [B, h, n, 1]
		if st.inPlace {
			st.lse = DynamicUpdateSlice(st.lse, lse, at) // [B, h, Lq, 1]
		} else {
			st.lses = append(st.lses, lse)
		}
	} else if n < rows {
		mRest = sliceAxis(st.m, 2, n, rows-n)
	}
	st.acc, st.m = accRest, mRest
	st.first += n
}

// flashHeads is MultiHeadAttention's Flash formulation: attention of the projected
// q [B, Lq, E], k, v [B, Lk', E] (Lk' with the bias_kv / zero_attn rows) computed by
// flashAttend in every head, merged back to [B, Lq, E].
func (b *MHABuilder) flashHeads(q, k, v *Node, d mhaDims, ms *maskSet, withWeights bool) *Node {
	switch {
	case withWeights:
		panicArg("Formulation", "Flash never forms the attention weights: use Done, or HeadParallel for DoneWithWeights")
	case !d.even:
		panicArg("Formulation", "Flash needs heads of equal size, got HeadSizes %v", d.sizes)
	case b.cfg.dropout.rate > 0:
		panicArg("Formulation", "Flash does not support attention dropout (rate %g)", b.cfg.dropout.rate)
	}
	h := b.numHeads
	blockQ, blockK := b.blockQ, b.blockK
	if blockQ == 0 {
		blockQ, blockK = flashBlocks(d.lq, ms.causal != NoCausal)
		blockQ, blockK = xlaFlashBlocks(q.Graph(), ms, blockQ, blockK)
	}
	if flashByRowsFits(q.Graph(), ms, d.kvHeads) {
		// The pure-Go backend's path by query blocks reads the projections sequence-major.
		q4, k4, v4 := seqMajorHeads(q, h).node, seqMajorHeads(k, d.kvHeads).node, seqMajorHeads(v, d.kvHeads).node // [B, L, h, d]
		return MergeHeads(flashAttendRouted(q4, k4, v4, true, b.headScale(d.sizes[0]), ms, blockQ, blockK))        // [B, Lq, E]
	}
	qh, kh, vh := SplitHeads(q, h), SplitHeads(k, d.kvHeads), SplitHeads(v, d.kvHeads) // [B, h, Lq, dk], [B, Hkv, Lk', dk] ×2
	out, _ := flashAttendGrad(qh, kh, vh, b.headScale(d.sizes[0]), ms, blockQ, blockK, false)
	return MergeHeads(out) // [B, Lq, E]
}
