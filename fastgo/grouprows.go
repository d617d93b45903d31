package fastgo

import "sync/atomic"

// The weighted sum of a grouped decoding step: in grouped-query attention, g = Hq/Hkv query
// heads share one key/value head, so one new token's attention weights are g rows against the
// same cache of 64-feature value rows:
//
//	w [batch, g, n] · V [batch, n, 64] → [batch, g, 64]   (V rows a stride apart)
//
// gemv (gemv.go) takes it up to gemvMaxRows rows, one or four rows per pass over V; with more
// (g = 32 with one key/value head) it declines and the GEMM packs (copies) V first — in a
// profile of the modern suite's decoding step with one key/value head, a ninth of the step.
// groupRows reads V where it lies, in blocks of groupBlockRows rows, each block against every
// pair of weight rows of the task while it is in L1 (weightRows64); a pair's 8 output vectors
// stay in registers within a block and in the output between blocks. Sums run in another order
// than gemv's and the GEMM's, within the same bound (2(k+1)·u·Σ|a·b|).
//
// The scores q [batch, g, 64] · K [batch, n, 64]ᵀ of the same step (groupScores) stream tiles of
// 64 key rows from L1 once per query row, as gemv's dotRows does, but for caches of any length
// (gemv leaves large ones to the GEMM, which packs K). Reading each key row once for all g
// query rows (four key rows in registers against every query row) was tried: Go's register
// allocator keeps 16 vector registers, the 16 key vectors spilled, and it ran at half the speed.

// groupMaxRows is the most weight rows per batch example groupRows takes (a step of one token
// with Hq/Hkv query heads per key/value head: 32 for multi-query attention at Hq 32). More rows
// are a prompt or a flash tile, whose products the GEMM does better: with 64 (flashrows'
// diagonal row groups of the llm causal case, 64 × up to 1024 keys, went through groupScores)
// fastgo's BenchmarkMHA/llm_causal took 627, 623, 704 CPU-ms against 569, 587, 678 with the
// GEMM, interleaved.
const groupMaxRows = 32

// groupCalls counts the products groupRows computed; useGroupRows switches it on (off: gemv
// and the GEMM take these products, as before it existed — for tests and benchmarks).
var (
	groupCalls   atomic.Int64
	useGroupRows = true
)

// groupBlockRows is the V rows weightRows64 reads per block (16 KB, in L1 for every pair of
// weight rows), groupTileKeys the K rows per task of groupScores (the same 16 KB), groupPairs
// the pairs of weight rows per task.
const (
	groupBlockRows = 64
	groupTileKeys  = 64
	groupPairs     = 4
)

// groupMinWork is the fewest multiply-adds per task (a variable for the benchmarks' A/B,
// MHALAB_FASTGO_AB=groupmin=…). A decoding step's product over one cache chunk (the modern
// suite: 8 × 4 rows or 1 × 32 rows against [256, 64], 2¹⁹ multiply-adds) is cut into tasks
// for both cores: the pure-Go backend as mhalab configures it ("ops_sequential") runs the 16
// chunk products of a layer one after another, so a product on one goroutine left a core
// idle. BenchmarkKVDecode, 2¹⁷ against 2²⁰ (one task per product), alternated in one run:
// Hkv 8 20.3 → 16.5 ms per token, Hkv 1 15.3 → 12.6 ms (2¹⁶ and 2¹⁵ alike, within the noise).
// With GoMLX's parallel op scheduler (simplego's default), which runs the chunk products side
// by side, Hkv 8 measured 1.05× slower and Hkv 1 0.87× (MHALAB_SIMPLEGO=ops_parallel). Not
// measured with AVX-512.
var groupMinWork = 1 << 17

// groupSplitWork is the fewest multiply-adds of a whole product that groupGrain still spreads
// over the workers when groupMinWork would make it one task: SmolLM2's decoding products (3
// key/value heads, 3 query rows each, a 128-position cache: 74k multiply-adds, one task of
// ~11 µs on one core while the other waited) ran 11 → 9.5 µs on two (fastgo's op profile, 80
// steps, binaries alternated twice). Lowering groupMinWork instead to 2¹⁴ did that too, but cut
// the modern suite's larger products finer and slowed them (BenchmarkKVDecode, A/B: Hkv 32
// 1.04×, Hkv 8 1.02× the time).
const groupSplitWork = 1 << 15

// groupGrain is the tasks per range of a product of tasks tasks of work multiply-adds each:
// at least groupMinWork multiply-adds a range, except that a product of at least
// groupSplitWork that this would leave in one range is cut into one range per worker.
func groupGrain(tasks, work, workers int) int {
	grain := ceilDiv(groupMinWork, work)
	if grain >= tasks && tasks*work >= groupSplitWork && workers > 1 && tasks > 1 {
		return ceilDiv(tasks, min(workers, tasks))
	}
	return grain
}

// groupPrefetch switches groupScores' prefetch of the next tile, with AVX2 (off: for
// benchmarks' A/B, MHALAB_FASTGO_AB=groupprefetch=0,1; not measured with AVX-512).
var groupPrefetch = true

// groupRows computes out[b, i, j] = Σ_k lhs(b, i, k)·rhs(b, j, k) for the two products above
// (float32 with AVX-512 or AVX2+FMA; 2 ≤ m ≤ groupMaxRows lhs rows contiguous along k, a
// constant stride apart; the scores: k = 64, rhs rows contiguous along k, a constant stride
// apart; the weighted sum: n = 64, rhs contiguous along its 64 columns, its rows a constant
// stride apart) and reports whether it did (false: nothing written, gemv or gemm takes the
// product).
//
//	out: [batch, m, n], row-major, fully overwritten.
func groupRows[T Float](lhs, rhs operand[T], out []T, batch, m, n, k, workers int) bool {
	l, ok := any(lhs).(operand[float32])
	if !ok || !useGroupRows || !hasGroupRows() || m < 2 || m > groupMaxRows || n < 1 || k < 1 {
		return false
	}
	r := any(rhs).(operand[float32])
	o := any(out).([]float32)
	// Query or weight rows: contiguous along k, a constant stride apart.
	if !l.contiguous || l.crossStride < k {
		return false
	}
	ldl := l.crossStride
	if k == 64 && r.contiguous && n >= 2 && r.crossStride >= 64 {
		groupScores(l, r, o, batch, m, n, workers)
		warmAfter(r.flat, workers)
		return true
	}
	if n != 64 || !r.crossContiguous {
		return false
	}
	ldr := 64 // V rows a stride apart (one row: any)
	if k > 1 {
		if ldr = uniformStride(r.contractOff); ldr < 64 {
			return false
		}
	}
	groupCalls.Add(1)
	// Tasks of groupPairs pairs of weight rows: each reads its example's V from memory once,
	// then from L1 for every pair. A task holds at least groupMinWork multiply-adds.
	groups := ceilDiv(m, 2*groupPairs)
	grain := groupGrain(batch*groups, min(m, 2*groupPairs)*k*64, workers)
	parallelFor(batch*groups, grain, workers, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			b, i := task/groups, (task%groups)*2*groupPairs
			rows := min(2*groupPairs, m-i)
			w := l.flat[l.batchOff[b]+l.crossOff[i]+l.contractOff[0]:]
			vals := r.flat[r.batchOff[b]+r.crossOff[0]+r.contractOff[0]:]
			weightRows64(w, ldl, rows, vals, ldr, k, o[(b*m+i)*64:], 64)
		}
	})
	warmAfter(r.flat, workers)
	return true
}

// groupScores is groupRows for the scores q [batch, m, 64] · K [batch, n, 64]ᵀ → [batch, m, n],
// K's rows a constant stride apart: tiles of groupTileKeys key rows (16 KB, in L1), each
// streamed once per query row by dotRowsF32Vec — gemv's streamed rows, without gathering the
// queries first and for caches of any length (gemv leaves more than gemvDotMaxB values of K to
// the GEMM, which packs them).
func groupScores(l, r operand[float32], o []float32, batch, m, n, workers int) {
	groupCalls.Add(1)
	tiles := ceilDiv(n, groupTileKeys)
	grain := groupGrain(batch*tiles, m*groupTileKeys*64, workers)
	parallelFor(batch*tiles, grain, workers, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			b, j0 := task/tiles, (task%tiles)*groupTileKeys
			j1 := min(j0+groupTileKeys, n)
			keys := r.flat[r.batchOff[b]+r.crossOff[j0]+r.contractOff[0]:]
			// The next tile's lines, a part before each query row's pass over this one: the
			// first pass waits for memory and the others compute from L1, so without it the
			// memory stream idles through m−1 passes of m. BenchmarkGroupRowsDecode/scores,
			// alternated in one run (load ~2.6): Hkv 8 (4 rows) 53.3 → 46.7 µs, Hkv 1 (32
			// rows, from L1) 29.1 → 28.4. (The weighted sum's blocks, read twice from memory
			// in two halves of columns, measured slower with it: Hkv 8 1.03×, Hkv 1 1.36×.)
			var next []float32
			if groupPrefetch && !vecAVX512 && r.crossStride == 64 && task+1 < hi { // AVX2: measured here
				nb, nj0 := (task+1)/tiles, ((task+1)%tiles)*groupTileKeys
				nj1 := min(nj0+groupTileKeys, n)
				next = r.flat[r.batchOff[nb]+r.crossOff[nj0]+r.contractOff[0]:][:(nj1-nj0-1)*r.crossStride+64]
			}
			for i := range m {
				if next != nil {
					part := ceilDiv(len(next), m-i)
					prefetchF32(next[:part])
					next = next[part:]
				}
				q := l.flat[l.batchOff[b]+l.crossOff[i]+l.contractOff[0]:][:64]
				dotRowsF32Vec(q, keys, r.crossStride, o[(b*m+i)*n+j0:(b*m+i)*n+j1])
			}
		}
	})
}
