package mhalib

import (
	"fmt"
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
// Every tile is [B, h, rows, BlockK] (on the pure-Go backend cut into query blocks,
// [B, h, BlockQ, BlockK] each: see gradients); the score tiles of a step depend on the dQ
// accumulator of the previous step (as in the forward pass, flashRows.after), so that XLA keeps
// about two alive. Memory is O(Lq·BlockK + L·d); the work is one more matrix product per tile
// than differentiating plain attention (the recomputed scores).
//
// # Memory on the pure-Go backend
//
// With its default configuration that backend runs a graph by a queue of ready nodes
// (goschedule_internal_test.go replays it): every node whose inputs are ready runs, and its
// result lives until its last user. (mhalab's own xla.New configures it "ops_sequential": nodes
// run in the order they were built, tile after tile, and what remains is the Go runtime's:
// freed buffers are pooled by exact size, see gradients.) So waiting for the previous tile
// (dependOn) must reach every node of a tile that is not O(L·d) in all:
// the row slices of q, dO, lse and D are cut once per query block (blockRows), lse and D are
// broadcast by Sub inside the tile instead of by a BroadcastToDims node, the tiles of masks
// built from constants wait for the token too (maskSet.token), and slices and joins are Slice
// and Concatenate (below). Before that (2026-12-01) all of them were computed at the start and
// held by the parallel scheduler.
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
	if !withLSE && flashByRowsFits(q.Graph(), ms, k.Shape().Dim(1)) { // (it has no additive masks nor sinks: only q, k, v take a gradient)
		return flashAttendRouted(q, k, v, false, scale, ms, blockQ, blockK), nil // no packing (flashgradroute.go)
	}
	return flashAttendPacked(q, k, v, scale, ms, blockQ, blockK, withLSE)
}

// flashAttendPacked is flashAttendGrad by packing (see "A gradient of several inputs in GoMLX").
func flashAttendPacked(q, k, v *Node, scale float64, ms *maskSet, blockQ, blockK int, withLSE bool) (output, lse *Node) {
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
//
// The tiles are flashPlan's. On XLA each is computed whole: [B, Hq, rows, BlockK], rows the
// query rows that still see keys. On the pure-Go backend each is cut into its query blocks, so
// that every piece has the same shape [B, Hq, BlockQ, BlockK]: that backend keeps the buffers
// it frees in pools by exact size (GoMLX v0.26 simplego, buffers.go), and the pools keep a
// freed buffer until the second garbage collection after; tiles of ever new sizes (rows shrink
// from key block to key block with a causal mask) never reuse one and the process grows with
// all the tiles ever computed, O(L²), while equal pieces reuse the same few buffers. Its
// gradient of the queries is accumulated per query block (blockRows), XLA's over the rows
// being computed (rowAccumulator).
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
	rowsIn := []*Node{q, dO, lseSafe, d} // what a tile reads of its query rows

	var dq dqAccumulator = &rowAccumulator{graph: g, dtype: dtype, batch: B, heads: Hq, width: dk, in: rowsIn}
	cut := Lq // rows per piece of a tile: the whole tile
	if !differentiableSlices(g) {
		dq = newBlockRows(rowsIn, fb.blockQ)
		cut = fb.blockQ
	}
	dkCols := &colPieces{graph: g, shape: []int{B, Hkv, 0, dk}, axis: 2}
	dvCols := &colPieces{graph: g, shape: []int{B, Hkv, 0, dvDim}, axis: 2}
	biasCols := make([]*colPieces, len(fb.biasGrad))
	for i, bi := range fb.biasGrad {
		biasCols[i] = &colPieces{graph: g, shape: ms.bias[bi].Shape().Clone().Dimensions, axis: 3}
		biasCols[i].shape[3] = 0
	}
	var token *Node // a finite scalar of the previous piece, nil before the first
	for _, t := range ms.flashPlan(fb.blockQ, fb.blockK) {
		c0, cols := t.Col0, t.Col1-t.Col0
		var dkj, dvj *Node                      // [B, Hkv, cols, dk], [B, Hkv, cols, dv]
		bias := make([]*Node, len(fb.biasGrad)) // the masks' shapes with cols keys
		for first := t.Row0; first < t.Row1; first += cut {
			rows := min(cut, t.Row1-first)
			// Every operand of the piece waits for the previous piece: XLA would otherwise
			// compute the products that need no accumulator (dP = dO·Vᵀ) and the row slices of
			// every tile up front and keep them all, O(L²) again; the pure-Go backend runs every
			// node whose inputs are ready.
			in := dq.rows(first, rows, token)                // q, dO, lse, D of the rows: [B, Hq, rows, dk|dv|1|1]
			kb := dependOn(sliceRows(fb.k, c0, cols), token) // [B, Hkv, cols, dk]
			vb := dependOn(sliceRows(fb.v, c0, cols), token) // [B, Hkv, cols, dv]
			pg := fb.piece(in, kb, vb, first, c0, token)
			acc := dq.add(first, pg.dq)
			dkj, dvj = addOrSet(dkj, pg.dk), addOrSet(dvj, pg.dv)
			for i := range bias {
				bias[i] = addOrSet(bias[i], pg.bias[i])
			}
			// The next piece waits for all three products of this one (the gradient of the
			// queries as accumulated), so that XLA cannot leave one of them (and the tiles of P
			// and dS it reads) for later.
			token = finiteSum(firstEntry(acc), firstEntry(pg.dk), firstEntry(pg.dv))
		}
		dkCols.add(c0, dkj)
		dvCols.add(c0, dvj)
		for i, b := range bias {
			biasCols[i].add(c0, b)
		}
	}
	grads := []*Node{
		MulScalar(dq.done(Lq), fb.scale), // [B, Hq, Lq, dk]
		dkCols.done(Lk, dtype),           // [B, Hkv, Lk, dk]
		dvCols.done(Lk, dtype),           // [B, Hkv, Lk, dv]
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

// pieceGrads is one piece's share of the gradients: of its query rows, dq [B, Hq, rows, dk]
// (unscaled); of its keys, dk [B, Hkv, cols, dk] and dv [B, Hkv, cols, dv]; of the additive
// masks of biasGrad, each in its mask's shape with cols keys.
type pieceGrads struct {
	dq, dk, dv *Node
	bias       []*Node
}

// piece computes the gradients of one piece of a tile: query rows [first, first+rows) read in
// in (q scaled, dO, lse, D: [B, Hq, rows, dk|dv|1|1]) against keys [c0, c0+cols) kb
// [B, Hkv, cols, dk] and vb [B, Hkv, cols, dv]; its masks wait for token on the pure-Go
// backend.
func (fb *flashBackward) piece(in []*Node, kb, vb *Node, first, c0 int, token *Node) pieceGrads {
	ms := fb.ms
	g := kb.Graph()
	qa, dOa, lseA, dA := in[0], in[1], in[2], in[3]
	B, Hq, rows, cols, Hkv := ms.batch, ms.heads, qa.Shape().Dim(2), kb.Shape().Dim(2), kb.Shape().Dim(1)

	// 1) The tile's logits and weights, recomputed as the forward pass did.
	tm := *ms
	tm.softCap = 0 // the soft-cap is applied here, its derivative is needed
	if ms.causal != NoCausal && causalSees(ms.queryPosition(first), c0+cols-1) && c0+cols <= ms.causalLk {
		tm.causal = NoCausal // the whole piece is on or below the diagonal
	}
	if !differentiableSlices(g) {
		tm.token = token // the pure-Go backend: the piece's masks wait too (maskSet.token)
	}
	x := groupedScores(qa, kb) // [B, Hq, rows, cols]
	s, th := x, (*Node)(nil)
	if ms.softCap > 0 {
		th = Tanh(MulScalar(x, 1/ms.softCap)) // [B, Hq, rows, cols]
		s = MulScalar(th, ms.softCap)
	}
	s = tm.apply(s, first, c0) // [B, Hq, rows, cols]
	p := Exp(Sub(s, lseA))     // [B, Hq, rows, cols]: lseA [B, Hq, rows, 1] broadcast by Sub, not materialised

	// 2) Gradients of the values, the weights and the logits.
	var pg pieceGrads
	pg.dv = groupedTransposedProduct(p, dOa, Hkv) // [B, Hkv, cols, dv]
	dp := groupedScores(dOa, vb)                  // [B, Hq, rows, cols]
	dS := Mul(p, Sub(dp, dA))                     // [B, Hq, rows, cols]
	if !math.IsInf(ms.fill, -1) {
		// A blocked logit is the fill value, whatever q, k and the masks: no gradient. (With
		// the fill −inf its weight, hence dS, is 0 already.)
		if allowed := tm.blockAllowed(g, first, rows, c0, cols); allowed != nil {
			dS = Where(BroadcastToDims(allowed, B, Hq, rows, cols), dS, ZerosLike(dS)) // [B, Hq, rows, cols]
		}
	}
	for _, bi := range fb.biasGrad {
		pg.bias = append(pg.bias, biasTile(dS, ms.bias[bi].Shape().Dimensions, first, ms.lq))
	}
	if th != nil {
		dS = Mul(dS, OneMinus(Square(th))) // [B, Hq, rows, cols]: d cap·tanh(x/cap)/dx = 1 − tanh²
	}

	// 3) Gradients of the queries (accumulated over key blocks) and of the keys.
	pg.dq = groupedWeightedSum(dS, kb)            // [B, Hq, rows, dk]
	pg.dk = groupedTransposedProduct(dS, qa, Hkv) // [B, Hkv, cols, dk]
	return pg
}

// addOrSet returns acc + x, or x when acc is nil.
func addOrSet(acc, x *Node) *Node {
	if acc == nil {
		return x
	}
	return Add(acc, x)
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
	return Concatenate(parts, 2) // [B|1, Hq|1, Lq, cols]
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
// token is nil. The scalar 0·token is broadcast by Add.
func dependOn(x, token *Node) *Node {
	if token == nil {
		return x
	}
	return Add(x, MulScalar(token, 0))
}

// In the backward pass nothing is differentiated again (noSecondDerivative), so it slices and
// joins with Slice and Concatenate on every backend: the pure-Go backend runs both, only their
// gradients need the Pad it lacks (take.go). There concatAxis would spread every part over the
// whole result and select with Where, a pass over the result per part, and its
// segment masks, built from constants, would all be computed up front (maskSet.token).

// sliceRows returns x[:, :, from:from+n] (axis 2).
func sliceRows(x *Node, from, n int) *Node {
	if from == 0 && n == x.Shape().Dim(2) {
		return x
	}
	return SliceAxis(x, 2, AxisRange(from, from+n))
}

// firstEntry is the dependency token of the next tile: x[0, 0, 0, 0] of x [B, h, rows, d] as a
// scalar, 0 where it is not finite (see flashRows.after), without gradient.
func firstEntry(x *Node) *Node {
	t := Reshape(Slice(x, AxisRange(0, 1), AxisRange(0, 1), AxisRange(0, 1), AxisRange(0, 1))) // scalar
	return StopGradient(Where(IsFinite(t), t, ZerosLike(t)))
}

// finiteSum returns the sum of finite scalars, 0 where it overflows (a dependency token).
func finiteSum(xs ...*Node) *Node {
	t := xs[0]
	for _, x := range xs[1:] {
		t = Add(t, x)
	}
	return StopGradient(Where(IsFinite(t), t, ZerosLike(t)))
}

// dqAccumulator sums the gradient of the queries over key blocks and gives each piece of a
// tile its rows.
type dqAccumulator interface {
	// rows returns q, dO, lse and D (the backward pass's rowsIn) of query rows
	// [first, first+n), made to wait for token.
	rows(first, n int, token *Node) []*Node
	// add adds a piece's gradient x [B, Hq, n, dk] of rows [first, first+n) and returns the sum
	// it went into (which the next piece's token reads).
	add(first int, x *Node) *Node
	// done returns every row's gradient [B, Hq, lq, dk] (zero for rows no piece had).
	done(lq int) *Node
}

// rowAccumulator (XLA) sums the gradient of query rows [first, end) over key blocks; rows that
// see no further key block are finished (kept in order) and dropped, as flashRows does for the
// output.
type rowAccumulator struct {
	graph               *Graph
	dtype               dtypes.DType
	batch, heads, width int
	in                  []*Node // rowsIn: [B, Hq, Lq, ·] each
	first, end          int
	acc                 *Node   // [B, Hq, end−first, width]
	finished            []*Node // finished rows, in order
}

func (r *rowAccumulator) rows(first, n int, token *Node) []*Node {
	out := make([]*Node, len(r.in))
	for i, x := range r.in {
		out[i] = dependOn(sliceRows(x, first, n), token) // [B, Hq, n, ·]
	}
	return out
}

func (r *rowAccumulator) add(first int, x *Node) *Node {
	r.finishTo(first)
	r.enter(first + x.Shape().Dim(2))
	r.acc = Add(r.acc, x)
	return r.acc
}

func (r *rowAccumulator) done(lq int) *Node {
	r.finishTo(lq)
	return joinRows(r.finished)
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
		r.acc = Concatenate([]*Node{r.acc, zeros}, 2)
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
		r.finished = append(r.finished, sliceRows(r.acc, 0, n))
		r.acc = sliceRows(r.acc, n, rows-n)
	}
	r.first = to
}

// blockRows (the pure-Go backend) holds the gradient of the queries per query block of n rows,
// and the rows each block reads, cut once for all key blocks (O(L·d) in all, whenever the
// backend runs the cuts).
type blockRows struct {
	n   int
	in  [][]*Node // per block: q, dO, lse, D [B, Hq, n, ·]
	acc []*Node   // per block: the gradient so far [B, Hq, n, dk], nil before any piece
}

// newBlockRows cuts rowsIn ([B, Hq, Lq, ·] each) into blocks of n rows.
func newBlockRows(rowsIn []*Node, n int) *blockRows {
	lq := rowsIn[0].Shape().Dim(2)
	b := &blockRows{n: n}
	for first := 0; first < lq; first += n {
		var in []*Node
		for _, x := range rowsIn {
			in = append(in, sliceRows(x, first, min(n, lq-first))) // [B, Hq, n, ·]
		}
		b.in = append(b.in, in)
	}
	b.acc = make([]*Node, len(b.in))
	return b
}

// block returns the index of the block of rows [first, first+n), which must be one block.
func (b *blockRows) block(first, n int) int {
	i := first / b.n
	if first%b.n != 0 || i >= len(b.in) || b.in[i][0].Shape().Dim(2) != n {
		panic(fmt.Errorf("mhalib: FlashAttention's backward pass: rows [%d, %d) are not a query block of %d rows", first, first+n, b.n))
	}
	return i
}

func (b *blockRows) rows(first, n int, token *Node) []*Node {
	in := b.in[b.block(first, n)]
	out := make([]*Node, len(in))
	for i, x := range in {
		out[i] = dependOn(x, token) // [B, Hq, n, ·]
	}
	return out
}

func (b *blockRows) add(first int, x *Node) *Node {
	i := b.block(first, x.Shape().Dim(2))
	b.acc[i] = addOrSet(b.acc[i], x)
	return b.acc[i]
}

func (b *blockRows) done(int) *Node {
	parts := make([]*Node, len(b.acc))
	for i, a := range b.acc {
		if a == nil {
			q := b.in[i][0] // [B, Hq, n, dk]
			a = Zeros(q.Graph(), q.Shape())
		}
		parts[i] = a
	}
	return joinRows(parts)
}

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
	if len(c.parts) == 1 {
		return c.parts[0]
	}
	return Concatenate(c.parts, c.axis)
}
