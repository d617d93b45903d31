package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// FlashAttention's backward pass: FlashAttention-2's (Dao 2023, algorithm 2), which recomputes
// the attention weights tile by tile instead of keeping them.
//
// Automatic differentiation of the unrolled forward pass (flash.go) would keep every tile of
// probabilities until the backward pass reaches it: O(Lq·Lk) memory, as plain attention. The
// forward pass keeps only what the backward pass needs, all O(L): the output o [B, h, Lq, dv]
// and the log-sum-exp of each row, lse [B, h, Lq]. With the output's gradient dO, per row
//
//	D_i = Σ_d dO_id·o_id − dlse_i      (dlse: the gradient of lse when DoneWithLSE's lse is used)
//
// and then, for every tile the forward pass computed (flashPlan, the same schedule: tiles
// above the causal diagonal or outside the window are skipped again), with s the masked,
// scaled logits of the tile recomputed from q and k:
//
//	P   = exp(s − lse)                 the attention weights of the tile  [B, h, rows, cols]
//	dV += Pᵀ·dO                        (complete for the key block: its tile has every row that sees it)
//	dP  = dO·Vᵀ
//	dS  = P ∘ (dP − D)                 the gradient of the logits (0 where blocked)
//	dQ += dS·K·scale                   accumulated over key blocks, rows finish as in the forward
//	dK  = dSᵀ·Q·scale
//
// With a soft-cap s = cap·tanh(x/cap), dS is multiplied by 1 − tanh²(x/cap); an additive mask
// gets dS (summed over its broadcast axes), the sink logits −Σ_i exp(sink − lse_i)·D_i.
// Every tile is [B, h, rows, BlockK]; the score tiles of a step depend on the dQ accumulator of
// the previous step (as in the forward pass, flashRows.after), so that XLA keeps about two
// alive. Memory is O(Lq·BlockK + L·d); the work is one more matrix product per tile than
// differentiating plain attention (the recomputed scores).
//
// # A gradient of several inputs in GoMLX
//
// GoMLX v0.26 sets a custom gradient only on an identity of one node
// (IdentityWithCustomGradient). So everything that may need a gradient, and the forward pass's
// results, are packed in one matrix P [rows, c] with c = B·h·Lq·dv, one row per result
// (flashPack):
//
//	row 0        o, computed by flashAttend from inputs whose gradient is stopped
//	row 1        lse in column 0 of [B, h, Lq, dv] (the rest zeros)
//	rows 2…      q, k, v, the additive masks and the sinks, flattened, then zeros to fill the row
//
// and Z = IdentityWithCustomGradient(P, backward); the output is row 0 of Z, the lse column 0 of
// row 1, bit for bit what flashAttend computed. The adjoint of Z carries dO in row 0 and dlse in
// row 1; backward returns the gradients packed the same way, and the gradient of the packing
// (slices of a concatenation, which every backend runs) takes each to its input. The rows are
// whole tensors so that getting them out of Z is a slice along the short axis of rows (the
// pure-Go backend differentiates it as a gather of one row).
//
// # Precision
//
// The weights are recomputed as exp(s − lse), so they are as exact as lse. That holds for any
// row with an unblocked logit of ordinary size. A row whose every logit is huge — every key
// blocked with a finite Fill such as FillMinus1e9, or an additive −1e9 on all of them — has
// lse ≈ −1e9 + log n, and −1e9 keeps only about 1e-7 (float64) or 64 (float32) of it: its
// recomputed weights are off by that (float64: ~1e-8 relative; float32: all 1 instead of 1/n).
// Such rows get zero weights and no such error with the default fill −inf.
//
// The backward pass cannot be differentiated again: a second derivative through FlashAttention
// panics with an *ArgumentError (use ScaledDotProductAttention).

// flashAttendGrad is flashAttend (same arguments and results) whose gradient is the
// recomputing backward pass described above.
func flashAttendGrad(q, k, v *Node, scale float64, ms *maskSet, blockQ, blockK int, withLSE bool) (output, lse *Node) {
	fb := &flashBackward{
		q: StopGradient(q), k: StopGradient(k), v: StopGradient(v),
		ms: ms.stoppedGradients(), scale: scale, blockQ: blockQ, blockK: blockK,
	}
	fb.o, fb.lse = flashAttend(fb.q, fb.k, fb.v, scale, fb.ms, blockQ, blockK, true) // [B, Hq, Lq, dv], [B, Hq, Lq]
	B, Hq, Lq, dv := fb.o.Shape().Dim(0), fb.o.Shape().Dim(1), fb.o.Shape().Dim(2), fb.o.Shape().Dim(3)

	// The inputs that may need a gradient: q, k, v, and the additive masks and sinks unless they
	// are computed from constants only.
	inputs := []*Node{q, k, v}
	for i, b := range ms.bias {
		if !fromConstants(b) {
			inputs = append(inputs, b)
			fb.biasGrad = append(fb.biasGrad, i)
		}
	}
	if ms.sinks != nil && !fromConstants(ms.sinks) {
		inputs = append(inputs, ms.sinks)
		fb.sinksGrad = true
	}

	width := B * Hq * Lq * dv
	lse4 := Reshape(fb.lse, B, Hq, Lq, 1)                                                           // [B, Hq, Lq, 1]
	lseRow := lseInColumn0(lse4, dv)                                                                // [B, Hq, Lq, dv]
	packed := joinFlat(append([]*Node{StopGradient(fb.o), StopGradient(lseRow)}, inputs...), width) // [rows, c]
	z := IdentityWithCustomGradient(packed, func(_, adj *Node) *Node {
		dO := Reshape(sliceAxis(adj, 0, 0, 1), B, Hq, Lq, dv) // [B, Hq, Lq, dv]
		var dlse *Node
		if withLSE {
			dlse = Reshape(columnOf(Reshape(sliceAxis(adj, 0, 1, 1), B, Hq, Lq, dv), 0), B, Hq, Lq, 1) // [B, Hq, Lq, 1]
		}
		grads := fb.gradients(dO, dlse)
		zeros := Zeros(adj.Graph(), shapes.Make(adj.DType(), 2, width)) // rows 0 and 1: o and lse take no gradient
		return IdentityWithCustomGradient(joinFlat(append([]*Node{zeros}, grads...), width), noSecondDerivative)
	})
	output = Reshape(sliceAxis(z, 0, 0, 1), B, Hq, Lq, dv) // [B, Hq, Lq, dv]
	if withLSE {
		lse = Reshape(columnOf(Reshape(sliceAxis(z, 0, 1, 1), B, Hq, Lq, dv), 0), B, Hq, Lq) // [B, Hq, Lq]
	}
	return output, lse
}

// noSecondDerivative is the gradient of FlashAttention's gradient: there is none.
func noSecondDerivative(_, _ *Node) *Node {
	panic(&ArgumentError{Arg: "FlashAttention", Msg: "its gradient cannot be differentiated again (a second derivative): use ScaledDotProductAttention"})
}

// lseInColumn0 returns x [B, h, L, 1] as column 0 of [B, h, L, n] whose other columns are 0.
func lseInColumn0(x *Node, n int) *Node {
	if n == 1 {
		return x
	}
	dims := x.Shape().Clone().Dimensions
	dims[3] = n
	col := Iota(x.Graph(), shapes.Make(dtypes.Int32, 1, 1, 1, n), 3)                                    // [1, 1, 1, n]
	first := BroadcastToDims(Equal(col, ZerosLike(col)), dims...)                                       // [B, h, L, n]
	return Where(first, BroadcastToDims(x, dims...), Zeros(x.Graph(), shapes.Make(x.DType(), dims...))) // [B, h, L, n]
}

// columnOf returns column j of x [..., n] as [..., 1].
func columnOf(x *Node, j int) *Node {
	if x.Shape().Dim(-1) == 1 {
		return x
	}
	return sliceAxis(x, -1, j, 1)
}

// fromConstants reports whether x is computed from constants only (no parameter or variable
// upstream): such a mask needs no gradient.
func fromConstants(x *Node) bool {
	seen := map[NodeId]bool{}
	var walk func(n *Node) bool
	walk = func(n *Node) bool {
		if seen[n.Id()] {
			return true
		}
		seen[n.Id()] = true
		if n.Type() == NodeTypeParameter {
			return false
		}
		for _, in := range n.Inputs() {
			if !walk(in) {
				return false
			}
		}
		return true
	}
	return walk(x)
}

// stoppedGradients returns ms with the gradient of its additive masks and sinks stopped (the
// forward pass of flashAttendGrad).
func (ms *maskSet) stoppedGradients() *maskSet {
	out := *ms
	out.bias = make([]*Node, len(ms.bias))
	for i, b := range ms.bias {
		out.bias[i] = StopGradient(b)
	}
	if ms.sinks != nil {
		out.sinks = StopGradient(ms.sinks)
	}
	return &out
}

// flashBackward holds what the backward pass needs: the forward pass's inputs (gradients
// stopped), its output and log-sum-exp, and which masks and sinks want gradients.
type flashBackward struct {
	q, k, v        *Node // [B, Hq, Lq, dk], [B, Hkv, Lk, dk], [B, Hkv, Lk, dv]
	ms             *maskSet
	scale          float64
	blockQ, blockK int
	o, lse         *Node // [B, Hq, Lq, dv], [B, Hq, Lq]
	biasGrad       []int // indices of ms.bias that get a gradient
	sinksGrad      bool
}

// gradients returns the gradients of q, k, v, then of the additive masks of biasGrad and of the
// sinks (if sinksGrad), for the output gradient dO [B, Hq, Lq, dv] and, if not nil, the
// log-sum-exp's gradient dlse [B, Hq, Lq, 1].
func (fb *flashBackward) gradients(dO, dlse *Node) []*Node {
	ms := fb.ms
	g := dO.Graph()
	dtype := dO.DType()
	B, Hq, Lq := ms.batch, ms.heads, ms.lq
	Hkv, Lk, dk, dvDim := fb.k.Shape().Dim(1), fb.k.Shape().Dim(2), fb.k.Shape().Dim(3), fb.v.Shape().Dim(3)

	q := MulScalar(fb.q, fb.scale)                          // [B, Hq, Lq, dk]
	lse4 := Reshape(fb.lse, B, Hq, Lq, 1)                   // [B, Hq, Lq, 1]
	lseSafe := Where(IsFinite(lse4), lse4, ZerosLike(lse4)) // [B, Hq, Lq, 1]: rows blocked everywhere give P = 0
	d := ReduceAndKeep(Mul(dO, fb.o), ReduceSum, -1)        // [B, Hq, Lq, 1]
	if dlse != nil {
		d = Sub(d, dlse) // [B, Hq, Lq, 1]
	}
	qs, ks, vs := newAxisSlicer(q, 2), newAxisSlicer(fb.k, 2), newAxisSlicer(fb.v, 2)
	dOs, lses, ds := newAxisSlicer(dO, 2), newAxisSlicer(lseSafe, 2), newAxisSlicer(d, 2)
	noCap := *ms
	noCap.softCap = 0 // the soft-cap is applied here, its derivative is needed

	dq := &rowAccumulator{graph: g, dtype: dtype, batch: B, heads: Hq, width: dk}
	dkCols := &colPieces{graph: g, shape: []int{B, Hkv, 0, dk}, axis: 2}
	dvCols := &colPieces{graph: g, shape: []int{B, Hkv, 0, dvDim}, axis: 2}
	biasCols := make([]*colPieces, len(fb.biasGrad))
	for i, bi := range fb.biasGrad {
		biasCols[i] = &colPieces{graph: g, shape: ms.bias[bi].Shape().Clone().Dimensions, axis: 3}
		biasCols[i].shape[3] = 0
	}
	for _, t := range ms.flashPlan(fb.blockQ, fb.blockK) {
		dq.finishTo(t.Row0)
		dq.enter(t.Row1)
		first, rows, c0, cols := t.Row0, t.Row1-t.Row0, t.Col0, t.Col1-t.Col0
		// Every operand of the tile waits for the previous tile: XLA would otherwise compute the
		// products that need no accumulator (dP = dO·Vᵀ) and the row slices of every tile up
		// front and keep them all, O(L²) again.
		qa := dependOn(qs.slice(first, rows), dq.token)   // [B, Hq, rows, dk]
		kb := dependOn(ks.slice(c0, cols), dq.token)      // [B, Hkv, cols, dk]
		vb := dependOn(vs.slice(c0, cols), dq.token)      // [B, Hkv, cols, dv]
		dOa := dependOn(dOs.slice(first, rows), dq.token) // [B, Hq, rows, dv]

		// 1) The tile's logits and weights, recomputed as the forward pass did.
		tileMasks := &noCap
		if ms.causal != NoCausal && causalSees(ms.queryPosition(first), c0+cols-1) && c0+cols <= ms.causalLk {
			below := noCap
			below.causal = NoCausal // the whole tile is on or below the diagonal
			tileMasks = &below
		}
		x := groupedScores(qa, kb) // [B, Hq, rows, cols]
		s, th := x, (*Node)(nil)
		if ms.softCap > 0 {
			th = Tanh(MulScalar(x, 1/ms.softCap)) // [B, Hq, rows, cols]
			s = MulScalar(th, ms.softCap)
		}
		s = tileMasks.apply(s, first, c0)                                             // [B, Hq, rows, cols]
		p := Exp(Sub(s, BroadcastToDims(lses.slice(first, rows), B, Hq, rows, cols))) // [B, Hq, rows, cols]

		// 2) Gradients of the values, the weights and the logits.
		dvj := groupedTransposedProduct(p, dOa, Hkv) // [B, Hkv, cols, dv]
		dvCols.add(c0, dvj)
		dp := groupedScores(dOa, vb)                                                     // [B, Hq, rows, cols]
		dS := Mul(p, Sub(dp, BroadcastToDims(ds.slice(first, rows), B, Hq, rows, cols))) // [B, Hq, rows, cols]
		if !math.IsInf(ms.fill, -1) {
			// A blocked logit is the fill value, whatever q, k and the masks: no gradient. (With
			// the fill −inf its weight, hence dS, is 0 already.)
			if allowed := tileMasks.blockAllowed(g, first, rows, c0, cols); allowed != nil {
				dS = Where(BroadcastToDims(allowed, B, Hq, rows, cols), dS, ZerosLike(dS)) // [B, Hq, rows, cols]
			}
		}
		for i, bi := range fb.biasGrad {
			biasCols[i].add(c0, biasTile(dS, ms.bias[bi].Shape().Dimensions, first, Lq))
		}
		if th != nil {
			dS = Mul(dS, OneMinus(Square(th))) // [B, Hq, rows, cols]: d cap·tanh(x/cap)/dx = 1 − tanh²
		}

		// 3) Gradients of the queries (accumulated over key blocks) and of the keys.
		dq.add(groupedWeightedSum(dS, kb))           // [B, Hq, rows, dk]
		dkj := groupedTransposedProduct(dS, qa, Hkv) // [B, Hkv, cols, dk]
		dkCols.add(c0, dkj)
		// The next tile waits for all three products of this one, so that XLA cannot leave
		// one of them (and the tiles of P and dS it reads) for later.
		dq.token = finiteSum(dq.token, flashToken(dkj), flashToken(dvj))
	}
	dq.finishTo(Lq)
	grads := []*Node{
		MulScalar(dq.done(), fb.scale), // [B, Hq, Lq, dk]
		dkCols.done(Lk, dtype),         // [B, Hkv, Lk, dk]
		dvCols.done(Lk, dtype),         // [B, Hkv, Lk, dv]
	}
	for _, bc := range biasCols {
		grads = append(grads, bc.done(ms.lk, dtype)) // the mask's shape
	}
	if fb.sinksGrad {
		// d/d sink_h = −Σ_{b,i} exp(sink_h − lse_bhi)·D_bhi   [Hq]
		sink := BroadcastToDims(Reshape(ms.sinks, 1, Hq, 1, 1), B, Hq, Lq, 1) // [B, Hq, Lq, 1]
		pSink := Exp(Sub(sink, lseSafe))                                      // [B, Hq, Lq, 1]
		grads = append(grads, Neg(ReduceSum(Mul(pSink, d), 0, 2, 3)))         // [Hq]
	}
	return grads
}

// biasTile reduces the logits' gradient dS [B, Hq, rows, cols] of query rows [first,
// first+rows) to an additive mask's shape dims [B|1, Hq|1, Lq|1, ·]: summed over the mask's
// broadcast axes, and, for a mask with Lq rows, placed among zero rows: [B|1, Hq|1, Lq|1, cols].
func biasTile(dS *Node, dims []int, first, lq int) *Node {
	var axes []int
	for a := range 3 {
		if dims[a] == 1 && dS.Shape().Dim(a) != 1 {
			axes = append(axes, a)
		}
	}
	t := dS
	if len(axes) > 0 {
		t = ReduceAndKeep(dS, ReduceSum, axes...) // [B|1, Hq|1, rows|1, cols]
	}
	rows := t.Shape().Dim(2)
	if dims[2] == 1 || rows == lq {
		return t
	}
	parts := []*Node{}
	pad := func(n int) {
		if n > 0 {
			d := t.Shape().Clone().Dimensions
			d[2] = n
			parts = append(parts, Zeros(t.Graph(), shapes.Make(t.DType(), d...)))
		}
	}
	pad(first)
	parts = append(parts, t)
	pad(lq - first - rows)
	return concatAxis(parts, 2) // [B|1, Hq|1, Lq, cols]
}

// groupedTransposedProduct returns wᵀ·x summed over each group of query heads, for
// w [B, Hq, rows, cols] and x [B, Hq, rows, d]: [B, Hkv, cols, d], query head h belonging to
// key/value head h/(Hq/Hkv) as in groupedScores.
func groupedTransposedProduct(w, x *Node, hkv int) *Node {
	B, Hq, rows, cols := w.Shape().Dim(0), w.Shape().Dim(1), w.Shape().Dim(2), w.Shape().Dim(3)
	if hkv != Hq {
		G := Hq / hkv
		w = Reshape(w, B, hkv, G*rows, cols)             // [B, Hkv, G·rows, cols]
		x = Reshape(x, B, hkv, G*rows, x.Shape().Dim(3)) // [B, Hkv, G·rows, d]
	}
	return DotGeneral(w, []int{2}, []int{0, 1}, x, []int{2}, []int{0, 1}) // [B, Hkv, cols, d]
}

// dependOn returns x made to depend on token (x + 0·token; see flashRows.after), or x when
// token is nil.
func dependOn(x, token *Node) *Node {
	if token == nil {
		return x
	}
	return Add(x, MulScalar(BroadcastToDims(token, x.Shape().Dimensions...), 0))
}

// finiteSum returns the sum of finite scalars, 0 where it overflows (a dependency token).
func finiteSum(xs ...*Node) *Node {
	t := xs[0]
	for _, x := range xs[1:] {
		t = Add(t, x)
	}
	return StopGradient(Where(IsFinite(t), t, ZerosLike(t)))
}

// rowAccumulator sums the gradient of query rows [first, end) over key blocks; rows that see no
// further key block are finished (kept in order) and dropped, as flashRows does for the output.
type rowAccumulator struct {
	graph               *Graph
	dtype               dtypes.DType
	batch, heads, width int
	first, end          int
	acc                 *Node   // [B, Hq, end−first, width]
	finished            []*Node // finished rows, in order
	token               *Node   // one entry of acc (flashToken) and of the tile's other products, nil before the first block
}

// enter lets rows [end, to) in with a zero gradient.
func (r *rowAccumulator) enter(to int) {
	n := to - r.end
	if n <= 0 {
		return
	}
	zeros := Zeros(r.graph, shapes.Make(r.dtype, r.batch, r.heads, n, r.width))
	if r.acc == nil {
		r.acc = zeros
	} else {
		r.acc = concatAxis([]*Node{r.acc, zeros}, 2)
	}
	r.end = to
}

// finishTo finishes rows [first, to) (rows never entered get zeros).
func (r *rowAccumulator) finishTo(to int) {
	if to <= r.first {
		return
	}
	r.enter(to)
	n, rows := to-r.first, r.end-r.first
	if n == rows {
		r.finished = append(r.finished, r.acc)
		r.acc = nil
	} else {
		s := newAxisSlicer(r.acc, 2)
		r.finished = append(r.finished, s.slice(0, n))
		r.acc = s.slice(n, rows-n)
	}
	r.first = to
}

// add adds a block's contribution [B, Hq, end−first, width] to the rows being accumulated.
func (r *rowAccumulator) add(x *Node) {
	r.acc = Add(r.acc, x)
	r.token = flashToken(r.acc)
}

// done returns every row's gradient [B, Hq, Lq, width] (after finishTo(Lq)).
func (r *rowAccumulator) done() *Node { return concatAxis(r.finished, 2) }

// colPieces collects the gradient of key blocks along axis, in order, with zeros for the keys
// no tile visited.
type colPieces struct {
	graph *Graph
	shape []int // the result's shape, axis set to 0
	axis  int
	next  int // keys [0, next) are covered
	parts []*Node
}

func (c *colPieces) zeros(n int, dtype dtypes.DType) {
	if n <= 0 {
		return
	}
	d := append([]int(nil), c.shape...)
	d[c.axis] = n
	c.parts = append(c.parts, Zeros(c.graph, shapes.Make(dtype, d...)))
	c.next += n
}

// add appends the gradient x of keys [c0, c0 + x.dim(axis)).
func (c *colPieces) add(c0 int, x *Node) {
	c.zeros(c0-c.next, x.DType())
	c.parts = append(c.parts, x)
	c.next = c0 + x.Shape().Dim(c.axis)
}

// done returns the gradient of all n keys.
func (c *colPieces) done(n int, dtype dtypes.DType) *Node {
	c.zeros(n-c.next, dtype)
	return concatAxis(c.parts, c.axis)
}
