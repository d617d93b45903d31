package fastgo

// Two batch examples per task: a decoding step's products over a cache chunk.
//
// A decoding step with as many key/value heads as query heads multiplies one query row per
// head by the head's keys (q·Kᵀ, the dot form) and one row of attention weights per head by its
// values (weights·V, the axpy form): batch = heads, m = 1, and each head's chunk of the cache,
// [256, 64] float32, is 64 KB read once from memory. gemv gave each task one head's rows, read
// in address order: one stream per core. Reading two heads' rows side by side keeps two streams
// in flight per core, and the hardware's prefetchers, which follow each stream within its 4 KB
// page, fetch ahead for both. BenchmarkGEMVPair (32 heads × [256, 64] per product, 100
// chunks, 800 MB in all: more than the caches; 2 workers; -count 3) read 33.5–34.5 GB/s with
// pairs against 28.3–30.5 without for q·Kᵀ, 36.6–37.5 against 29.0–29.6 for weights·V; and
// BenchmarkKVDecode/Hkv=32 (MHALAB_FASTGO_AB=pairs=0,1, 200 steps alternated) took 0.97× the
// time, and 0.97× again with whole chunks per task (pairTile). Each output is computed by
// exactly the operations of the one-example kernels (dotRows64 and axpy64x1), in the same
// order: the results are the same bits.

// pairExamples switches the pairs on (off: for tests and benchmarks' A/B,
// MHALAB_FASTGO_AB=pairs=0,1).
var pairExamples = true

// pairTile is the fewest outputs per task in the dot form with pairs: a whole chunk of the
// cache's keys (256 by default), not gemv's 64-column tiles, so that each of the two streams
// runs for 64 KB. BenchmarkKVDecode/Hkv=32 (MHALAB_FASTGO_AB=pairtile=0,128,256, 300 steps
// alternated): 20.96, 20.72 and 20.32 ms a step.
var pairTile = 256

// gemvPairs reports whether gemv gives each task two batch examples (m = 1, float32, the
// pair kernels of this CPU: AVX-512).
func gemvPairs[T Float](batch, m int) bool {
	var x T
	_, f32 := any(x).(float32)
	return pairExamples && f32 && m == 1 && batch >= 2 && hasPairKernels()
}

// gemvDotPair is gemvDot for one row of A in each of two examples (a0 against B rows at base0 +
// crossOff[j], a1 at base1 + crossOff[j]; outputs c0[j], c1[j] for j0 ≤ j < j1), B rows of 64
// values a constant stride apart; false (nothing written) otherwise.
func gemvDotPair[T Float](a0, a1, b []T, base0, base1 int, crossOff []int, c0, c1 []T, k, j0, j1 int) bool {
	if !streamRows || k != 64 || j1-j0 < 4 {
		return false
	}
	stride := uniformStride(crossOff[j0:j1])
	if stride < k {
		return false
	}
	af, ok := any(a0).([]float32)
	if !ok {
		return false
	}
	bf := any(b).([]float32)
	rows := (j1-j0-1)*stride + k
	return dotRows64PairF32Vec(af[:k], any(a1).([]float32)[:k],
		bf[base0+crossOff[j0]:][:rows], bf[base1+crossOff[j0]:][:rows], stride,
		any(c0).([]float32)[j0:j1], any(c1).([]float32)[j0:j1])
}

// gemvAxpyPair is gemvAxpy for one row of A in each of two examples and 64 columns (c0[j] =
// Σ_k a0[kk]·b[base0 + contractOff[kk] + j], c1 likewise from a1 and base1, j0 ≤ j < j0+64), B
// rows a constant stride apart; false (nothing written) otherwise.
func gemvAxpyPair[T Float](a0, a1, b []T, base0, base1 int, contractOff []int, c0, c1 []T, k, j0, j1 int) bool {
	if j1-j0 != 64 || len(contractOff) != k {
		return false
	}
	stride := 64
	if k > 1 {
		stride = uniformStride(contractOff)
	}
	if stride < 64 {
		return false
	}
	af, ok := any(a0).([]float32)
	if !ok {
		return false
	}
	bf := any(b).([]float32)
	rows := (k-1)*stride + 64
	return axpy64PairF32Vec(af[:k], any(a1).([]float32)[:k],
		bf[base0+contractOff[0]+j0:][:rows], bf[base1+contractOff[0]+j0:][:rows], stride,
		any(c0).([]float32)[j0:j0+64], any(c1).([]float32)[j0:j0+64])
}
