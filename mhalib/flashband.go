package mhalib

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Sliding-window attention as one banded computation, for XLA.
//
// With a window every query row r sees a band of keys that moves with it:
//
//	r + lo ≤ j ≤ r + hi      (lo = shift − Left; hi = shift + Right, or the causal position)
//
// Cut the rows into chunks of C rows. The rows of chunk i see keys [i·C + lo, i·C + C − 1 + hi]:
// a slab of S = C + hi − lo keys, the same width for every chunk. Gathering each chunk's slab
// of k and v (the keys padded with zeros on both sides, so that every slab is in range) turns
// the whole window into one batched product per side:
//
//	q  [B, h, n, C, dk]   ·   kSlab [B, h, n, S, dk]ᵀ   →   scores [B, h, n, C, S]
//	softmax over S (masked: key j of chunk i is i·C + lo + j; it is seen by row c of the chunk
//	when 0 ≤ j − c ≤ hi − lo and the key exists), then · vSlab [B, h, n, S, dv] → [B, h, n, C, dv]
//
// Work and memory are O(L·(Left + Right + C)) — the window, not the whole matrix — and the graph
// has a fixed handful of operations, where the key-block loop of flashAttend unrolls one step per
// key block (at L = 8192, 64 steps of 1024 rows each, twice the window's pairs, and a minute of
// compilation). XLA's CPU compiler runs the two batched products as large matrix products with
// batch dimensions first and the contracted dimension last on both sides: no transposes.
//
// flashBanded is used on XLA only (the pure-Go backend keeps flashAttend), for a window of at
// most bandMaxSpan keys per chunk that is at most half the keys, and only with the masks it can
// express: causal and window, soft-cap, and no attention / key padding / additive masks, ALiBi,
// sinks, extra add_bias_kv / add_zero_attn keys or grouped-query heads. Every other case goes
// to flashAttend. Its result equals flashAttend's (and plain attention's) up to rounding.

// bandChunk is the number of query rows per chunk: the slab is the window plus bandChunk keys,
// so smaller chunks waste fewer pairs, larger ones give XLA larger matrix products.
const bandChunk = 128

// bandMaxSpan is the widest slab (keys per chunk) flashBanded accepts.
const bandMaxSpan = 4096

// bandPlan is the host-side shape of a banded window: every row r sees keys [r+lo, r+hi].
type bandPlan struct {
	lo, hi  int // key offsets of a row's first and last key
	chunk   int // query rows per chunk (C)
	chunks  int // n = ⌈Lq/C⌉
	span    int // S = C + hi − lo keys per slab
	padLeft int // zero keys before key 0 so that the first slab starts at index 0
}

// bandPlanFor returns the banded plan of ms, or ok = false when flashBanded does not apply
// (see above; dims as flashAttend's).
func (ms *maskSet) bandPlanFor(g *Graph, hq, hkv int) (p bandPlan, ok bool) {
	w := ms.window
	if w == nil || g.Backend().Name() != "xla" || hq != hkv || len(ms.allowed) > 0 || len(ms.bias) > 0 ||
		ms.alibi != nil || ms.sinks != nil || ms.lk != ms.causalLk || w.Left < 0 {
		return p, false
	}
	shift := w.shift(ms.lq, ms.lk)
	p.lo = shift - w.Left
	hiSet := false
	if w.Right >= 0 {
		p.hi, hiSet = shift+w.Right, true
	}
	if ms.causal != NoCausal {
		c := ms.queryPosition(0) // the causal position of row r is r + c
		if !hiSet || c < p.hi {
			p.hi = c
		}
		hiSet = true
	}
	if !hiSet || p.hi < p.lo {
		return p, false
	}
	// Every row must see at least one key: rows without keys are flashAttend's business.
	if 0+p.hi < 0 || ms.lq-1+p.lo > ms.lk-1 || max(0, p.lo) > min(ms.lk-1, p.hi) {
		return p, false
	}
	p.chunk = min(bandChunk, ms.lq)
	p.chunks = (ms.lq + p.chunk - 1) / p.chunk
	p.span = p.chunk + p.hi - p.lo
	if p.span > bandMaxSpan || 2*p.span > ms.lk {
		return p, false
	}
	p.padLeft = max(0, -p.lo)
	return p, true
}

// slabs returns x [B, h, Lk, d] cut into the chunks' slabs [B, h, n, S, d]: slab i holds keys
// [i·C + lo, i·C + lo + S), zero where they do not exist.
func (p bandPlan) slabs(x *Node) *Node {
	dims := x.Shape().Dimensions
	batch, heads, lk, d := dims[0], dims[1], dims[2], dims[3]
	g, dtype := x.Graph(), x.DType()
	pieces := (p.span + p.chunk - 1) / p.chunk // slabs are built from whole chunks of keys
	first := p.lo + p.padLeft                  // index of slab 0's first key in the padded keys
	need := first + (p.chunks+pieces-1)*p.chunk
	padRight := max(0, need-(p.padLeft+lk))
	parts := []*Node{x}
	if p.padLeft > 0 {
		parts = append([]*Node{Zeros(g, shapes.Make(dtype, batch, heads, p.padLeft, d))}, parts...)
	}
	if padRight > 0 {
		parts = append(parts, Zeros(g, shapes.Make(dtype, batch, heads, padRight, d)))
	}
	padded := concatAxis(parts, 2) // [B, h, padLeft + Lk + padRight, d]
	slab := make([]*Node, pieces)
	for t := range slab {
		s := sliceAxis(padded, 2, first+t*p.chunk, p.chunks*p.chunk) // [B, h, n·C, d]
		slab[t] = Reshape(s, batch, heads, p.chunks, p.chunk, d)     // [B, h, n, C, d]
	}
	out := concatAxis(slab, 3) // [B, h, n, pieces·C, d]
	return sliceAxis(out, 3, 0, p.span)
}

// allowed is the "may attend" mask of the scores [1, 1, n, C, S]: row c of chunk i sees slab
// key j (key index i·C + lo + j) when 0 ≤ j − c ≤ hi − lo and 0 ≤ key index < Lk.
func (p bandPlan) allowed(g *Graph, lk int) *Node {
	shape := shapes.Make(dtypes.Int32, 1, 1, p.chunks, p.chunk, p.span)
	i := Iota(g, shape, 2)
	c := Iota(g, shape, 3)
	j := Iota(g, shape, 4)
	rel := Sub(j, c)
	key := AddScalar(Add(MulScalar(i, float64(p.chunk)), j), float64(p.lo))
	inBand := LogicalAnd(GreaterOrEqual(rel, ZerosLike(rel)), LessOrEqual(rel, Scalar(g, dtypes.Int32, p.hi-p.lo)))
	exists := LogicalAnd(GreaterOrEqual(key, ZerosLike(key)), LessThan(key, Scalar(g, dtypes.Int32, lk)))
	return LogicalAnd(inBand, exists)
}

// flashBanded computes flashAttend's result for a window by plan p: q [B, h, Lq, dk] (already
// scaled), k [B, h, Lk, dk], v [B, h, Lk, dv] → output [B, h, Lq, dv] and, if withLSE,
// lse [B, h, Lq].
func flashBanded(q, k, v *Node, ms *maskSet, p bandPlan, withLSE bool) (output, lse *Node) {
	g, dtype := q.Graph(), q.DType()
	batch, heads, lq, dk := ms.batch, ms.heads, ms.lq, q.Shape().Dim(3)
	dv := v.Shape().Dim(3)
	rows := p.chunks * p.chunk
	if rows > lq { // the last chunk is padded with zero queries, dropped at the end
		q = concatAxis([]*Node{q, Zeros(g, shapes.Make(dtype, batch, heads, rows-lq, dk))}, 2)
	}
	qc := Reshape(q, batch, heads, p.chunks, p.chunk, dk) // [B, h, n, C, dk]
	ks, vs := p.slabs(k), p.slabs(v)                      // [B, h, n, S, dk], [B, h, n, S, dv]

	s := DotGeneral(qc, []int{4}, []int{0, 1, 2}, ks, []int{4}, []int{0, 1, 2}) // [B, h, n, C, S]
	if ms.softCap > 0 {
		s = MulScalar(Tanh(MulScalar(s, 1/ms.softCap)), ms.softCap)
	}
	dims := s.Shape().Dimensions
	s = Where(BroadcastToDims(p.allowed(g, ms.lk), dims...), s, Scalar(g, dtype, ms.fill)) // [B, h, n, C, S]

	// Every real row sees a key (bandPlanFor); the zero rows that pad the last chunk may see
	// none: their maximum is −inf and their sum 0, replaced by 0 and 1 so that no NaN reaches
	// the gradient of the keys through them.
	m := StopGradient(ReduceAndKeep(s, ReduceMax, -1)) // [B, h, n, C, 1]
	m = Where(IsFinite(m), m, ZerosLike(m))
	e := Exp(Sub(s, BroadcastToDims(m, dims...))) // [B, h, n, C, S]
	l := ReduceAndKeep(e, ReduceSum, -1)          // [B, h, n, C, 1]
	l = Where(Equal(l, ZerosLike(l)), OnesLike(l), l)
	o := DotGeneral(e, []int{4}, []int{0, 1, 2}, vs, []int{3}, []int{0, 1, 2}) // [B, h, n, C, dv]
	o = Div(o, BroadcastToDims(l, batch, heads, p.chunks, p.chunk, dv))        // [B, h, n, C, dv]
	output = Reshape(o, batch, heads, rows, dv)                                // [B, h, n·C, dv]
	if rows > lq {
		output = sliceAxis(output, 2, 0, lq)
	}
	if withLSE {
		lse = Reshape(Add(m, Log(l)), batch, heads, rows) // [B, h, n·C]
		if rows > lq {
			lse = sliceAxis(lse, 2, 0, lq)
		}
	}
	return output, lse
}
