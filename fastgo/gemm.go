package fastgo

import (
	"runtime"
	"sync"
)

// Float is the element type of the GEMM: float32 or float64.
type Float interface{ ~float32 | ~float64 }

// Block sizes of the Goto/BLIS loop nest (cache blocking), in elements:
//   - kc: the depth of one packed panel (the contracting axis is cut in kc slices);
//   - mc: the rows of A packed at once (an mc×kc block of A stays in L2);
//   - nc: the columns of B packed at once (a kc×nc panel of B stays in L2/L3).
//
// mc and nc are rounded to multiples of the micro-kernel's mr and nr.
const (
	kcBlock = 256
	mcBlock = 128
	ncBlock = 512
)

// microKernel computes one mr×nr tile of C from packed panels:
//
//	a: [kc, mr] (column k of the A micro-panel: mr consecutive values)
//	b: [kc, nr] (row k of the B micro-panel: nr consecutive values)
//	c: the tile's first element, rows ldc apart; c[i*ldc+j] for i < mr, j < nr.
//
// With accumulate it adds to c, otherwise it overwrites c.
type microKernel[T Float] struct {
	name   string
	mr, nr int
	// kc, when set, is the depth of the packed panels for this kernel instead of kcBlock (at
	// most kcBlock): a B micro-panel [kc, nr] should stay in L1.
	kc int
	fn func(kc int, a, b, c []T, ldc int, accumulate bool)
	// half, when set, is groups for the first nr/2 columns only (the B micro-panel still has nr
	// values per k): the last column panel of a product with few columns (attention's dv+1 = 65:
	// 64 + 1) then costs half a tile instead of a whole one.
	half func(kc int, a []T, lda, astride, gstride, groups int, b, c []T, ldc int, accumulate bool)
	// groups, when set (mr = 4), is the kernel over `groups` whole row groups in one call, all
	// against one B micro-panel: group g reads A's value of row r < 4, column k < kc at
	// a[g·gstride + r·lda + k·astride] (a packed micro-panel: lda 1, astride 4, gstride 4·kc;
	// A's rows in place: lda the rows' stride, astride 1, gstride 4·lda) and writes the tile of
	// c at row 4g. One call per column tile instead of one per tile: with kc = 64 (attention's
	// head width) a tile is ~90 ns of FMAs, and the Go loop around each call counted
	// (BenchmarkGEMMAVX2AB, one thread, GFLOP/cpu-s, a tile a call → groups: seed003's scores
	// [64, 128, 128]·64 71.6 → 83.9, long's [1024, 4096]·64 77.7 → 89.9, projections 83.1 → 85.8).
	groups func(kc int, a []T, lda, astride, gstride, groups int, b, c []T, ldc int, accumulate bool)
}

// operand describes one side of a normalised DotGeneral without copying it: element (batch,
// cross, contract) lives at flat[batchOff[batch] + crossOff[cross] + contractOff[contract]].
// Any axis order, transposition or multiple batch/contracting axes reduce to these three tables.
type operand[T Float] struct {
	flat                            []T
	batchOff, crossOff, contractOff []int
	// contiguous: contractOff[k] == contractOff[0] + k for every k (the contracting axis is the
	// innermost and only one, as in a row-major A·Bᵀ), so packing reads rows as slices.
	contiguous bool
	// crossContiguous: crossOff[i] == crossOff[0] + i for every i (the cross axis is the
	// innermost, as in a row-major B of A·B: attention's values, a [in, out] weight), so packing
	// copies runs of a micro-panel's width for each k.
	crossContiguous bool
	// crossStride: crossOff[i] == crossOff[0] + i·crossStride for every i (0 if not), with
	// contiguous: the operand is a strided matrix of rows, which packPanels transposes in 16×16
	// register blocks.
	crossStride int
}

// newOperand builds the operand of a flat row-major array of shape dims.
func newOperand[T Float](flat []T, dims, contractingAxes, batchAxes []int) operand[T] {
	op := operand[T]{flat: flat}
	op.batchOff, op.crossOff, op.contractOff = offsets(dims, contractingAxes, batchAxes)
	op.contiguous = isRun(op.contractOff)
	op.crossContiguous = isRun(op.crossOff)
	op.crossStride = uniformStride(op.crossOff)
	return op
}

// uniformStride returns s > 0 if offs[i] == offs[0] + i·s for every i (len(offs) ≥ 2), else 0.
func uniformStride(offs []int) int {
	if len(offs) < 2 || offs[1] <= offs[0] {
		return 0
	}
	s := offs[1] - offs[0]
	for i, off := range offs {
		if off != offs[0]+i*s {
			return 0
		}
	}
	return s
}

// isRun reports whether offs[i] == offs[0] + i for every i.
func isRun(offs []int) bool {
	for i, off := range offs {
		if off != offs[0]+i {
			return false
		}
	}
	return true
}

// gemm computes out[b, i, j] = Σ_k lhs(b, i, k) · rhs(b, j, k) for all b < batch, i < m, j < n.
//
//	out: [batch, m, n], row-major, fully overwritten.
//
// The work is cut into tiles of out (per batch example) that run on up to `workers` goroutines.
// A task is one column panel of nc columns and a run of consecutive mc-row tiles: for each kc
// slice it packs the B panel once and runs the Goto loop nest (ic → jr → ir) over its row
// tiles. (One task per tile packed the same B panel again for every row tile: for seed003's
// projections, [4096, 512]·[512, 1536], 32 times.)
func gemm[T Float](kern microKernel[T], lhs, rhs operand[T], out []T, batch, m, n, k, workers int) {
	gemmThen(kern, lhs, rhs, out, batch, m, n, k, workers, nil)
}

// gemmThen is gemm, then done(b, i0, i1) for every row i0 ≤ i < i1 of out's batch example b,
// each row once, when not nil: right after the task that computed whole rows (while they are
// still in the cache; fuse.go's row maxima), or after all tasks when a task computes parts of
// rows.
func gemmThen[T Float](kern microKernel[T], lhs, rhs operand[T], out []T, batch, m, n, k, workers int, done func(b, i0, i1 int)) {
	mr, nr := kern.mr, kern.nr
	kcb := kcBlock
	if kern.kc > 0 {
		kcb = min(kern.kc, kcBlock)
	}
	// A's rows read in place (no packing) by the groups kernel where they are contiguous
	// and lie a constant stride apart: with few columns in B (attention's n = 64…128 keys or
	// dv+1 values) packing A cost as much as the products.
	direct := lhs.contiguous && kern.groups != nil && lhs.crossStride > 0
	// Whole rows in each task, so that done reads them while they are in the cache: split in
	// column panels, every task's rows were finished only when all tasks were, and done read
	// them all again from memory (the rows' maxima of llm's [96, 160, 1024] scores: 1.9 ms on
	// top of the product's 8.9).
	wholeRows := done != nil && k <= kcb && n <= doneMaxCols
	tl := planTiles(mr, nr, batch, m, n, workers, wholeRows, direct && done == nil)
	mc, nc, mTiles, nTiles, mChunks, tilesPerTask := tl.mc, tl.nc, tl.mTiles, tl.nTiles, tl.mChunks, tl.tilesPerTask
	numTasks := batch * nTiles * mChunks
	workers = max(1, min(workers, numTasks))

	// With one kc slice and whole rows, each tile's rows are finished as soon as the tile is:
	// done reads them right away, from L1/L2, instead of the task's rows (up to 1 MiB) at the end.
	doneByTile := done != nil && nTiles == 1 && k <= kcb
	run := func(task int) {
		bIdx := task / (nTiles * mChunks)
		rest := task % (nTiles * mChunks)
		j0 := (rest / mChunks) * nc
		j1 := min(j0+nc, n)
		first := (rest % mChunks) * tilesPerTask
		last := min(first+tilesPerTask, mTiles)
		ws := getWorkspace[T](mc, nc, mr, nr)
		defer putWorkspace(ws)
		c := out[bIdx*m*n:]
		for p0 := 0; p0 < k; p0 += kcb {
			kc := min(kcb, k-p0)
			packPanels(ws.b, rhs, bIdx, j0, j1, p0, kc, nr)
			for tile := first; tile < last; tile++ {
				i0 := tile * mc
				i1 := min(i0+mc, m)
				if direct {
					macroKernelRows(kern, ws, lhs, bIdx, c, n, i0, i1, j0, j1, p0, kc, p0 > 0)
				} else {
					packPanels(ws.a, lhs, bIdx, i0, i1, p0, kc, mr)
					macroKernel(kern, ws, c, n, i0, i1, j0, j1, kc, p0 > 0)
				}
				if doneByTile {
					done(bIdx, i0, i1)
				}
			}
		}
		if done != nil && nTiles == 1 && !doneByTile {
			done(bIdx, first*mc, min(last*mc, m))
		}
	}
	if done != nil && nTiles > 1 {
		defer parallelFor(batch, 1, workers, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				done(b, 0, m)
			}
		})
	}

	// The tasks on the team's helpers (team.go), one range of tasks each at a time: goroutines
	// started per product found a helper still polling for its next job on the other core
	// after the op before, which kept that core until it yielded.
	parallelFor(numTasks, 1, workers, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			run(task)
		}
	})
}

// tiling is how gemmThen cuts out [batch, m, n] into tasks: tiles of mc rows × nc columns
// (mTiles × nTiles of them per batch example), a task being one column tile of one example
// and tilesPerTask consecutive row tiles (mChunks tasks per column tile).
type tiling struct {
	mc, nc, mTiles, nTiles, mChunks, tilesPerTask int
}

// planTiles returns the tiling of a product for a micro-kernel of mr×nr tiles on workers
// goroutines: tiles of up to mcBlock × ncBlock, whole rows in a task when wholeRows (and
// n·k small, see gemmThen), shrunk until there are about 2 tiles per worker; then as many row
// tiles per task as leaves about 2 tasks per worker — or, when columnsOK (A read in place),
// columnPlan's column tiles of all rows, where they avoid packing B again per row chunk.
func planTiles(mr, nr, batch, m, n, workers int, wholeRows, columnsOK bool) tiling {
	fullMC := roundUp(min(mcBlock, roundUp(m, mr)), mr) // row tiles before any shrinking
	mc, nc := fullMC, roundUp(min(ncBlock, roundUp(n, nr)), nr)
	if wholeRows && n > nc {
		nc = roundUp(n, nr)
	}
	// Shrink the tiles while there are fewer tiles than about 2 per worker, so that both cores
	// get work on one large matmul too.
	for batch*ceilDiv(m, mc)*ceilDiv(n, nc) < 2*workers {
		if nc > 4*nr && nc >= mc {
			nc = roundUp(nc/2, nr)
		} else if mc > 2*mr {
			mc = roundUp(mc/2, mr)
		} else {
			break
		}
	}
	mTiles, nTiles := ceilDiv(m, mc), ceilDiv(n, nc)
	// Row tiles per task: as many as leaves about 2 tasks per worker.
	mChunks := min(mTiles, max(1, ceilDiv(2*workers, batch*nTiles)))
	tilesPerTask := ceilDiv(mTiles, mChunks)
	mChunks = ceilDiv(mTiles, tilesPerTask)
	if columnsOK {
		if width := columnPlan(batch, m, n, nr, mc, nc, tilesPerTask, mChunks, workers); width > 0 { // gemm_columns.go
			mTiles := ceilDiv(m, fullMC)
			return tiling{mc: fullMC, nc: width, mTiles: mTiles, nTiles: ceilDiv(n, width), mChunks: 1, tilesPerTask: mTiles}
		}
	}
	return tiling{mc: mc, nc: nc, mTiles: mTiles, nTiles: nTiles, mChunks: mChunks, tilesPerTask: tilesPerTask}
}

// macroKernel runs the micro-kernel over the packed mc×kc block of A and kc×nc panel of B:
// out rows [i0, i1), columns [j0, j1). Edge tiles (fewer than mr rows or nr columns left) go
// through a scratch tile so the micro-kernel always computes a full mr×nr.
func macroKernel[T Float](kern microKernel[T], ws *workspace[T], c []T, ldc, i0, i1, j0, j1, kc int, accumulate bool) {
	mr, nr := kern.mr, kern.nr
	for j := j0; j < j1; j += nr {
		bPanel := ws.b[((j-j0)/nr)*kc*nr:][:kc*nr]
		nCols := min(nr, j1-j)
		i := i0
		if kern.groups != nil && nCols == nr {
			g := (i1 - i0) / mr
			kern.groups(kc, ws.a, 1, mr, kc*mr, g, bPanel, c[i0*ldc+j:], ldc, accumulate)
			i += g * mr
		}
		for ; i < i1; i += mr {
			aPanel := ws.a[((i-i0)/mr)*kc*mr:][:kc*mr]
			nRows := min(mr, i1-i)
			if nRows == mr && nCols == nr {
				kern.fn(kc, aPanel, bPanel, c[i*ldc+j:], ldc, accumulate)
				continue
			}
			tile := ws.tile
			if accumulate {
				for r := range nRows {
					copy(tile[r*nr:r*nr+nCols], c[(i+r)*ldc+j:][:nCols])
				}
			}
			kern.fn(kc, aPanel, bPanel, tile, nr, accumulate)
			for r := range nRows {
				copy(c[(i+r)*ldc+j:][:nCols], tile[r*nr:r*nr+nCols])
			}
		}
	}
}

// macroKernelRows is macroKernel reading A's rows in place (a constant stride apart) for every
// full group of 4 rows (kern.groups, a column of groups a call); only a last group of fewer
// rows is packed (into the first micro-panel of ws.a).
func macroKernelRows[T Float](kern microKernel[T], ws *workspace[T], lhs operand[T], batch int, c []T, ldc, i0, i1, j0, j1, p0, kc int, accumulate bool) {
	nr := kern.nr
	full := i0 + (i1-i0)/4*4
	if full < i1 {
		packPanels(ws.a, lhs, batch, full, i1, p0, kc, 4)
	}
	base := lhs.batchOff[batch] + lhs.contractOff[p0]
	s := lhs.crossStride
	groups := (full - i0) / 4 // whole row groups a column tile
	// tile4 computes the 4 rows from i into dst (rows ldc apart) against bPanel.
	tile4 := func(i int, bPanel, dst []T, ldc int) {
		kern.groups(kc, lhs.flat[base+lhs.crossOff[i]:], s, 1, 4*s, 1, bPanel, dst, ldc, accumulate)
	}
	for j := j0; j < j1; j += nr {
		bPanel := ws.b[((j-j0)/nr)*kc*nr:][:kc*nr]
		nCols := min(nr, j1-j)
		i := i0
		if groups > 0 && nCols == nr {
			kern.groups(kc, lhs.flat[base+lhs.crossOff[i0]:], s, 1, 4*s, groups, bPanel, c[i0*ldc+j:], ldc, accumulate)
			i += 4 * groups
		}
		for ; i < i1; i += 4 {
			nRows := min(4, i1-i)
			if nRows == 4 && nCols == nr {
				tile4(i, bPanel, c[i*ldc+j:], ldc)
				continue
			}
			tile := ws.tile
			if accumulate {
				for r := range nRows {
					copy(tile[r*nr:r*nr+nCols], c[(i+r)*ldc+j:][:nCols])
				}
			}
			switch {
			case nRows == 4 && nCols <= nr/2 && kern.half != nil:
				kern.half(kc, lhs.flat[base+lhs.crossOff[i]:], s, 1, 4*s, 1, bPanel, tile, nr, accumulate)
			case nRows == 4:
				tile4(i, bPanel, tile, nr)
			default:
				kern.fn(kc, ws.a[:kc*4], bPanel, tile, nr, accumulate)
			}
			for r := range nRows {
				copy(c[(i+r)*ldc+j:][:nCols], tile[r*nr:r*nr+nCols])
			}
		}
	}
}

// packPanels copies rows [r0, r1) × contract [p0, p0+kc) of one batch example of op into
// micro-panels of `width` rows each: dst[panel][k][w], zero-padded past r1 (so the micro-kernel
// never reads outside the operand and padded lanes contribute 0).
//
//	dst: [ceil((r1-r0)/width), kc, width]
func packPanels[T Float](dst []T, op operand[T], batch, r0, r1, p0, kc, width int) {
	base := op.batchOff[batch]
	contract := op.contractOff[p0 : p0+kc]
	var srcRows [64][]T // the panel's rows, when read as slices (width ≤ 64)
	for r := r0; r < r1; r += width {
		panel := dst[((r-r0)/width)*kc*width:][:kc*width]
		rows := min(width, r1-r)
		switch {
		case op.crossContiguous && rows == width && packRuns(panel, op.flat[base+op.crossOff[r]:], contract, width):
			// Runs of a whole panel's width copied in vector registers (a call of copy per
			// k for 32 values was 3% of causal L 4096's CPU time, packing the values).
		case op.crossContiguous:
			// The panel's rows are consecutive in memory for each k: one copy per k.
			first := op.flat[base+op.crossOff[r]:]
			for kk, off := range contract {
				copy(panel[kk*width:kk*width+rows], first[off:off+rows])
			}
		case op.contiguous && op.crossStride > 0 && rows == width && width%16 == 0 && kc >= 16 &&
			packTransposed(panel, op.flat[base+op.crossOff[r]+contract[0]:], op.crossStride, width, kc):
			// Strided rows, contiguous along the contracting axis: 16×16 register transposes
			// (a profile of seed003 spent 7% of its CPU time in the element-by-element transpose
			// below, packing the projections' weights and attention's keys).
		case op.contiguous && width <= len(srcRows):
			// Contiguous along the contracting axis (the common "row-major A" case): a transpose
			// of rows × kc, written in order, one k at a time, reading every row's k-th value.
			src := srcRows[:rows]
			for w := range src {
				src[w] = op.flat[base+op.crossOff[r+w]+contract[0]:][:kc]
			}
			for kk := range kc {
				out := panel[kk*width : kk*width+rows]
				for w, row := range src {
					out[w] = row[kk]
				}
			}
		default:
			for w := range rows {
				row := op.flat[base+op.crossOff[r+w]:]
				for kk, off := range contract {
					panel[kk*width+w] = row[off]
				}
			}
		}
		for w := rows; w < width; w++ {
			for kk := range kc {
				panel[kk*width+w] = 0
			}
		}
	}
}

// packTransposed fills panel [kc, width] with panel[k·width + w] = src[w·stride + k] for
// w < width (a multiple of 16), k < kc, and reports true; false (nothing written) where the
// 16×16 register transpose does not run (not float32, neither AVX-512 nor AVX2).
func packTransposed[T Float](panel, src []T, stride, width, kc int) bool {
	dst, ok := any(panel).([]float32)
	if !ok {
		return false
	}
	s := any(src).([]float32)
	full := kc / 16 * 16
	for w0 := 0; w0 < width; w0 += 16 {
		rows := s[w0*stride:]
		if transposeBlocksF32(rows, stride, dst[w0:], width, 0, 16, full) != full {
			return false
		}
		for k := full; k < kc; k++ {
			out := dst[k*width+w0:][:16]
			for w := range out {
				out[w] = rows[w*stride+k]
			}
		}
	}
	return true
}

// packRuns sets panel[k·width : (k+1)·width] = first[off_k : off_k+width] for each k with
// off_k = contract[k], and reports true; false (nothing written) where the vector copy does not
// run (not float32, width not a multiple of 16, neither AVX-512 nor AVX2).
func packRuns[T Float](panel, first []T, contract []int, width int) bool {
	dst, ok := any(panel).([]float32)
	if !ok {
		return false
	}
	return copyRunsF32(dst, any(first).([]float32), contract, width)
}

// doneMaxCols is the most columns gemmThen computes in one panel so that done sees whole rows
// (one kc slice: the packed B panel is then at most kc·doneMaxCols values, 1 MiB at kc 64).
const doneMaxCols = 4096

// workspace holds one task's packing buffers.
//
//	a: [mc/mr, kcBlock, mr]   b: [nc/nr, kcBlock, nr]   tile: [mr, nr]
type workspace[T Float] struct {
	a, b, tile []T
}

var workspacePools sync.Map // key: [4]int{sizeof T, len a, len b, len tile} → *sync.Pool

func getWorkspace[T Float](mc, nc, mr, nr int) *workspace[T] {
	var zero T
	key := [4]int{int(sizeOf(zero)), mc * kcBlock, nc * kcBlock, mr * nr}
	p, ok := workspacePools.Load(key)
	if !ok { // LoadOrStore alone allocated a pool and a closure on every call
		p, _ = workspacePools.LoadOrStore(key, &sync.Pool{New: func() any {
			return &workspace[T]{a: make([]T, key[1]), b: make([]T, key[2]), tile: make([]T, key[3])}
		}})
	}
	return p.(*sync.Pool).Get().(*workspace[T])
}

func putWorkspace[T Float](ws *workspace[T]) {
	var zero T
	key := [4]int{int(sizeOf(zero)), len(ws.a), len(ws.b), len(ws.tile)}
	if p, ok := workspacePools.Load(key); ok {
		p.(*sync.Pool).Put(ws)
	}
}

func sizeOf[T Float](v T) uintptr {
	switch any(v).(type) {
	case float32:
		return 4
	default:
		return 8
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }

// defaultWorkers is the number of goroutines a GEMM may use when the backend does not say.
func defaultWorkers() int { return runtime.GOMAXPROCS(0) }
