package fastgo

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Softmax's numerator computed inside the product that weighs the values: e = exp(s − m) made
// row by row into a small buffer right before the GEMM reads it as its left operand.
//
// fuse.go's Sub makes e in one pass over the tile of scores s, but e still goes to memory and
// comes back: in causal flash at L 4096 (fastgo's BenchmarkMHA/long_causal, B1 h8, tiles of
// [8, 512, 512] = 8 MiB) the fused Sub wrote each tile and the product e·v read it again, both
// at the speed of memory, not of the cores. When the Exp's uses are a DotGeneral that reads e as
// its left operand, contracting its last axis, and, after that DotGeneral in the graph's order,
// at most a ReduceSum over the last axis, the Sub defers: it hands on s itself with the rows'
// maxima m (a copy: [.., 1]), the Exp hands that on, and the DotGeneral computes e for a few
// rows at a time (expDotTileElems values, in L2), adds each row as the fused Sub would, and runs
// the same micro-kernel over those rows as over e in memory. The ReduceSum returns the sums
// made. Every value is that of the passes apart, bit for bit: each row of e is the same vector
// subtraction and exp of the same row, its sum the same sumRow, and the product the same kernel
// on the same kc slices in the same order (only which rows of C are finished first differs).
// Anything else that finds the deferred buffer (the DotGeneral taking another path, a ReduceSum
// before it, a copy for an Exp that does not own its input) first computes e into it or into the
// copy (materialize).

// expDotTileElems bounds the values of e made at once per task: 64 Ki, 256 KiB in float32 (128
// rows of 512 keys), which stay in a core's L2 with the packed values.
const expDotTileElems = 64 << 10

// expDotMaxCols is the most columns (dv) of a product that takes e this way: the values are
// packed whole, k × dv, once per task.
const expDotMaxCols = 256

// expDotInPlace switches reading the values in place (gemmExpRows) on; off for tests and
// benchmarks' A/B (MHALAB_FASTGO_AB=expdotinplace=0,1). Packing the values was a tenth of the
// CPU time of fastgo's BenchmarkMHA/llm_causal (B8 L1024 h12: a [512, 64] chunk of values per
// head and block of 128 rows) — a copy of rows that, head-major, are the panel already.
var expDotInPlace = true

// inPlaceValueCalls counts the products that read the values in place (tests).
var inPlaceValueCalls atomic.Int64

// expDotPlan returns the DotGeneral among exp's uses that may compute e itself (see above), or
// nil: exp's uses are that DotGeneral, reading exp as its left operand only, directly or through
// an Identity (via; not an output) that is its one use, and at most sum (a ReduceSum over the
// last axis, nil if none), which comes after the DotGeneral in the graph's order.
func expDotPlan(exp, sum *simplego.Node, nodes, outputs []*simplego.Node) (dot, via *simplego.Node) {
	readsOnlyLeft := func(u, x *simplego.Node) bool {
		in := nodeInputs(u)
		return nodeOp(u) == backends.OpTypeDotGeneral && len(in) == 2 && in[0] == x && in[1] != x
	}
	for _, u := range users(exp, nodes) {
		switch {
		case u == sum:
		case dot == nil && via == nil && readsOnlyLeft(u, exp):
			dot = u
		case dot == nil && via == nil && nodeOp(u) == backends.OpTypeIdentity && !isOutput(u, outputs):
			via = u
		default:
			return nil, nil
		}
	}
	if via != nil {
		us := users(via, nodes)
		if len(us) != 1 || !readsOnlyLeft(us[0], via) {
			return nil, nil
		}
		dot = us[0]
	}
	if dot == nil || sum != nil && nodeIndex(sum) < nodeIndex(dot) && !expDotAnyOrder.Load() {
		return nil, nil
	}
	return dot, via
}

// expDotAnyOrder lets a Sub defer when the sum comes before the product (tests: the sum then
// makes e in place, and in the Identity's output).
var expDotAnyOrder atomic.Bool

// expRows sets dst[r·cols : (r+1)·cols] = exp(s's row r − m[r]) for rows lo ≤ r < hi and, if
// sums is not nil, sums[r] to the row's sum: the fused Sub's pass, one pass over each row where
// the vector loops run (subExpSumF32Vec), else the subtraction, exp and sum one after another.
// With each row it asks for row r of next (if len(next) holds it; prefetch_simd.go): the rows
// the caller reads next.
func expRows(dst, s, m, sums, next []float32, cols, lo, hi int) {
	for r := lo; r < hi; r++ {
		if (r+1)*cols <= len(next) {
			prefetchAddr(uintptr(unsafe.Pointer(&next[r*cols])), cols*4)
		}
		row := dst[r*cols : (r+1)*cols]
		if sum, ok := subExpSumF32Vec(row, s[r*cols:(r+1)*cols], m[r], sums != nil); ok {
			if sums != nil {
				sums[r] = sum
			}
			continue
		}
		binaryF32Vec(opSub, row, s[r*cols:(r+1)*cols], m[r:r+1], false, false)
		expF32Vec(row, row)
		if sums != nil {
			sums[r] = sumRow(row)
		}
	}
}

// expRowsParallel is expRows over all rows of s (one per value of m), cut over workers.
func expRowsParallel(dst, s, m, sums []float32, workers int) {
	cols := len(s) / len(m)
	parallelFor(len(m), max(1, minParallelWork/cols), workers, func(lo, hi int) {
		expRows(dst, s, m, sums, nil, cols, lo, hi)
	})
}

// materialize computes e = exp(s − m) from the deferred tile t's s into dst (s itself or a copy's
// buffer) and the rows' sums, and marks t as no longer deferred.
func (t *fusedTile) materialize(dst, s []float32, workers int) {
	expRowsParallel(dst, s, t.m, t.sums, workers)
	t.dot, t.m = nil, nil
}

// gemmExpRows is gemm with A's rows made from lhs: row i of batch example b is
// exp(s_row − m[row]) where s_row is lhs's row (b, i), row its offset / k; sums[row] gets its
// sum when sums is not nil. It reports false (nothing done) where the product would not run as
// gemm's rows in place (see gemmThen's direct) or has more than expDotMaxCols columns.
func gemmExpRows(kern microKernel[float32], lhs, rhs operand[float32], m, sums, out []float32, batch, rows, n, k, workers int) bool {
	if kern.groups == nil || kern.mr != 4 || !lhs.contiguous || lhs.crossStride != k || rows <= groupMaxRows || n > expDotMaxCols || k < 1 {
		return false
	}
	for b := range batch {
		if (lhs.batchOff[b]+lhs.crossOff[0]+lhs.contractOff[0])%k != 0 {
			return false
		}
	}
	nr := kern.nr
	kcb := kcBlock
	if kern.kc > 0 {
		kcb = min(kern.kc, kcBlock)
	}
	mt := min(mcBlock, max(4, expDotTileElems/k/4*4)) // rows of e made at once
	tiles := ceilDiv(rows, mt)
	chunks := min(tiles, max(1, ceilDiv(2*workers, batch))) // tasks per example: ~2 per worker
	per := ceilDiv(tiles, chunks)
	chunks = ceilDiv(tiles, per)
	pw := roundUp(n, nr)
	// Values whose rows of one example lie one after another, n = nr apart ([B, h, keys, 64]:
	// attention's v, head-major) are their packed panels already: read in place.
	inPlace := expDotInPlace && n == nr && rhs.crossContiguous && (k == 1 || uniformStride(rhs.contractOff) == n)
	if inPlace {
		inPlaceValueCalls.Add(1)
	}
	// The offsets of the rows of e (read only, shared by the tasks).
	crossOff, contractOff := make([]int, mt), make([]int, k)
	for i := range crossOff {
		crossOff[i] = i * k
	}
	for j := range contractOff {
		contractOff[j] = j
	}
	// rowOf returns the row of m (and of s) of example b's first row.
	rowOf := func(b int) int { return (lhs.batchOff[b] + lhs.crossOff[0] + lhs.contractOff[0]) / k }
	// sRows returns the rows of s that tile tile of task t makes e of.
	sRows := func(t, tile int) []float32 {
		r0 := rowOf(t/chunks) + tile*mt
		return lhs.flat[r0*k : (r0+min(mt, rows-tile*mt))*k]
	}
	task := func(t, hi int) {
		b, first := t/chunks, (t%chunks)*per
		last := min(first+per, tiles)
		var bAll *[]float32 // the values [k, n], packed for every kc slice
		if inPlace {
			panel := rhs.flat[rhs.batchOff[b]+rhs.crossOff[0]+rhs.contractOff[0]:][:k*n]
			bAll = &panel
		} else {
			bAll = getPanels(k * pw)
			defer putPanels(bAll)
			for p0 := 0; p0 < k; p0 += kcb {
				packPanels((*bAll)[p0*pw:], rhs, b, 0, n, p0, min(kcb, k-p0), nr)
			}
		}
		e := getPanels(mt * k) // [mt, k]: the tile's rows of e
		defer putPanels(e)
		ws := getWorkspace[float32](mcBlock, nr, 4, nr)
		defer putWorkspace(ws)
		view := *ws
		rowsOfE := operand[float32]{flat: *e, batchOff: []int{0}, contractOff: contractOff, contiguous: true, crossStride: k}
		base := rowOf(b)
		c := out[b*rows*n:]
		for tile := first; tile < last; tile++ {
			i0 := tile * mt
			i1 := min(i0+mt, rows)
			r0 := base + i0
			var rowSums []float32
			if sums != nil {
				rowSums = sums[r0 : r0+i1-i0]
			}
			// The next tile's rows of s (this task's or the next one's, which this worker runs
			// next), asked for while this one's are made: s comes from memory, written a while
			// ago by the scores' product.
			var next []float32
			if tile+1 < last {
				next = sRows(t, tile+1)
			} else if t+1 < hi {
				next = sRows(t+1, (t+1)%chunks*per)
			}
			expRows(*e, lhs.flat[r0*k:], m[r0:r0+i1-i0], rowSums, next, k, 0, i1-i0)
			rowsOfE.crossOff = crossOff[:i1-i0]
			for p0 := 0; p0 < k; p0 += kcb {
				view.b = (*bAll)[p0*pw:]
				macroKernelRows(kern, &view, rowsOfE, 0, c[i0*n:], n, 0, i1-i0, 0, n, p0, min(kcb, k-p0), p0 > 0)
			}
		}
	}
	parallelFor(batch*chunks, 1, workers, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			task(t, hi)
		}
	})
	return true
}

var panelPools sync.Map // key: length → *sync.Pool of *[]float32

// getPanels returns a buffer of n float32 for packed panels or rows of e (contents undefined).
func getPanels(n int) *[]float32 {
	p, ok := panelPools.Load(n)
	if !ok {
		p, _ = panelPools.LoadOrStore(n, &sync.Pool{New: func() any {
			s := make([]float32, n)
			return &s
		}})
	}
	return p.(*sync.Pool).Get().(*[]float32)
}

func putPanels(s *[]float32) {
	if p, ok := panelPools.Load(len(*s)); ok {
		p.(*sync.Pool).Put(s)
	}
}

// takeDeferredIdentity is the Identity node between a deferred tile's Exp and its DotGeneral
// (ok): the buffer handed on when simplego hands it over, else a new buffer that the DotGeneral
// (or materialize, if the ReduceSum runs first) fills with e — no copy of s.
func takeDeferredIdentity(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, bool, error) {
	if fusedLive.Load() == 0 || len(inputs) != 1 {
		return nil, false, nil
	}
	v, found := fusedTiles.Load(inputs[0])
	if !found {
		return nil, false, nil
	}
	tile := v.(*fusedTile)
	tile.mu.Lock()
	defer tile.mu.Unlock()
	if tile.via != node || tile.exp != nil || tile.dot == nil {
		return nil, false, nil // e is in the buffer (or not ours): the Identity's own copy
	}
	if inputsOwned[0] {
		out := inputs[0]
		inputs[0] = nil
		count(opIdentity)
		return out, true, nil
	}
	out, flat, err := newOutput(backend, nodeShape(node))
	if err != nil {
		return nil, false, err
	}
	tile.alias, tile.aliasFlat = out, flat.([]float32)
	if _, loaded := fusedTiles.Swap(out, tile); !loaded {
		fusedLive.Add(1)
	}
	count(opIdentity)
	return out, true, nil
}

// deferredFor returns, locked, the deferred tile that a Sub left with buf for DotGeneral node
// dot (the Exp having handed it on), or nil.
func deferredFor(dot *simplego.Node, buf *simplego.Buffer) *fusedTile {
	if fusedLive.Load() == 0 {
		return nil
	}
	v, found := fusedTiles.Load(buf)
	if !found {
		return nil
	}
	tile := v.(*fusedTile)
	tile.mu.Lock()
	if tile.dot != dot || tile.exp != nil {
		tile.mu.Unlock()
		return nil
	}
	if tile.sum == nil || buf == tile.alias { // nothing else will look for it under buf
		dropFused(buf)
	}
	return tile
}

// runExpRows is run for a left operand of rows of s that the deferred tile makes e of: true
// when gemmExpRows computed out (and the tile is then no longer deferred).
func runExpRows(p dotParams, lhsShape, rhsShape shapes.Shape, lhs, rhs, out []float32, workers int, tile *fusedTile) bool {
	l := newOperand(lhs, lhsShape.Dimensions, p.lhsContractingAxes, p.lhsBatchAxes)
	r := newOperand(rhs, rhsShape.Dimensions, p.rhsContractingAxes, p.rhsBatchAxes)
	if len(tile.m)*p.contract != len(lhs) || !gemmExpRows(kernelF32, l, r, tile.m, tile.sums, out, p.batch, p.lhsCross, p.rhsCross, p.contract, workers) {
		return false
	}
	tile.dot, tile.m = nil, nil
	expDotCalls.Add(1)
	return true
}
