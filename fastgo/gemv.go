package fastgo

// Matrix–vector products: DotGenerals with few rows per batch example.
//
// Decoding one token multiplies a single row by every weight matrix and by the KV cache. The
// GEMM (gemm.go) packs B into micro-panels first, a transposing copy of the whole of B that
// pays off when many rows of A reuse it; with one row, packing reads and writes B once more
// than the product reads it. A profile of the modern suite's decoding step on this backend
// showed packPanels as the largest item. gemv reads B where it lies instead, in one of two
// forms, chosen by B's layout:
//
//   - dot form, B contiguous along the contracting axis (x·Wᵀ with W [out, in]; q·Kᵀ): each
//     output is a dot product of an A row and a B row;
//   - axpy form, B contiguous along its cross axis (x·W with W [in, out]; weights·V): for each
//     k, the B row k scaled by A's value is added to the output row.
//
// Outputs are cut into column tiles (over batch examples too) spread over goroutines. Sums run
// in another order than the GEMM's (within the same error bound, 2(k+1)·u·Σ|a·b|).

// gemvMaxRows is the most rows of A per batch example that gemv takes (more rows reuse a
// packed B enough for the GEMM to win) — except in the dot form with a small B: up to
// gemvDotMaxRows rows when B (n·k values per example) has at most gemvDotMaxB values and a vector
// kernel computes 4×4 blocks. (The axpy form with 32 rows measured slower than the GEMM: one
// 64-column tile is one task, on one core.) Grouped-query decoding multiplies the G·1 query rows of a key head
// (G = 32 with one key/value head) by a cache chunk [256, 64]; the GEMM spent most of such a
// product packing (transposing) the chunk.
const (
	dot4MaxK       = 256
	gemvMaxRows    = 8
	gemvDotMaxRows = 32
	gemvDotMaxB    = 1 << 16
)

// streamRows switches gemvDot's streamed rows (dotRows) on; off, the 4×4 blocks below do the
// same products (BenchmarkGEMVDecode compares them).
var streamRows = true

// dot4LongRows switches dot4 on for long rows (k > dot4MaxK) (dot4Long); off for
// benchmarks.
var dot4LongRows = true

// axpyWalk switches axpy64x1StridedAVX2 (gemv_avx2.go) on (off: for benchmarks' A/B,
// MHALAB_FASTGO_AB=axpywalk=0,1).
var axpyWalk = true

// dot4Long reports whether gemvDot takes long B rows four at a time (dot4) against fewer than 4
// rows of A, with AVX2+FMA or AVX-512. One row's dot streams its 8 KB in address order and
// ends in a horizontal sum; four rows side by side keep four streams in flight (the hardware
// prefetchers follow each within its 4 KB page) and share A's loads and one reduction.
// BenchmarkGEMVProj, x [1, 2048] · Wᵀ with W from memory, AVX2: 0.68–0.80× the time of one row at
// a time (n = 2048 rows 959 → 649 µs, n = 512 201 → 150 µs). With AVX-512 the four rows were
// first measured slower on matrices that the 480 MiB L3 cache of this machine holds; over 800 MB
// of rows [6144·16, 2048] (2 workers) they read 32.0–33.5 GB/s against 28.2–28.9 one row at a
// time, and BenchmarkKVDecode/Hkv=32 (MHALAB_FASTGO_AB=dot4long=0,1, 200 steps alternated) took
// 0.94× the time.
func dot4Long() bool { return dot4LongRows && (vecAVX2 || vecAVX512) }

// gemv computes what gemm does, out[b, i, j] = Σ_k lhs(b, i, k)·rhs(b, j, k), for m ≤
// gemvMaxRows (or the dot form's limits above) when rhs is contiguous along its contracting or
// its cross axis, and reports whether it did (false: nothing written).
//
//	out: [batch, m, n], row-major, fully overwritten.
func gemv[T Float](lhs, rhs operand[T], out []T, batch, m, n, k, workers int) bool {
	if m < 1 || n < 1 || k < 1 {
		return false
	}
	crossContiguous := true
	for j, off := range rhs.crossOff {
		if off != rhs.crossOff[0]+j {
			crossContiguous = false
			break
		}
	}
	if !crossContiguous && !rhs.contiguous {
		return false
	}
	if m > gemvMaxRows && !(m <= gemvDotMaxRows && !crossContiguous && n*k <= gemvDotMaxB && hasDot4x4[T]()) {
		return false
	}
	// A's rows of example b, [m, k] row-major: where they lie when they are contiguous rows k
	// apart (a decoding step's queries and attention weights, x of x·Wᵀ), else gathered (small:
	// m·k values per example). The gather, through the offset tables, was 7% of a profile of
	// the modern suite's decoding step with 32 key/value heads.
	aRowsOf := func(b int) []T {
		return lhs.flat[lhs.batchOff[b]+lhs.crossOff[0]+lhs.contractOff[0]:][:m*k]
	}
	lda := k // A's rows in aRowsOf(b): lda apart
	if !crossContiguous && lhs.contiguous && m > 1 && lhs.crossStride > k {
		// The dot form reads rows a constant stride apart where they lie (all-MiniLM-L6-v2's
		// scores: q rows of 32 values 384 apart). Gathered, they took a new slice of batch·m·k
		// values, cleared and filled on one core for every product: 0.7 MB for MiniLM's scores,
		// which took 554–623 µs so and 179–184 µs without (BenchmarkDotGeneral/minilm_scores).
		lda = lhs.crossStride
		aRowsOf = func(b int) []T {
			return lhs.flat[lhs.batchOff[b]+lhs.crossOff[0]+lhs.contractOff[0]:][:(m-1)*lda+k]
		}
	} else if !lhs.contiguous || m > 1 && lhs.crossStride != k {
		a := make([]T, batch*m*k)
		for b := range batch {
			for i := range m {
				row := a[(b*m+i)*k:][:k]
				base := lhs.batchOff[b] + lhs.crossOff[i]
				if lhs.contiguous { // a row of k values in place: one copy (MiniLM's q rows, 12 heads apart)
					copy(row, lhs.flat[base+lhs.contractOff[0]:][:k])
					continue
				}
				for kk, off := range lhs.contractOff {
					row[kk] = lhs.flat[base+off]
				}
			}
		}
		aRowsOf = func(b int) []T { return a[b*m*k:][:m*k] }
	}
	tile := 512 // output columns per task
	if !crossContiguous {
		tile = 64
	}
	tile = min(tile, n)
	// Dot form, fewer tiles than workers (x·Wᵀ over a few long rows: a decoding step's key and
	// value projections with one key/value head, W [64, 2048], one tile): narrower tiles, a
	// multiple of 4 columns, so that every worker takes some.
	if !crossContiguous && batch*ceilDiv(n, tile) < workers && n >= 4*workers {
		tile = 4 * ceilDiv(n, 4*workers)
	}
	tiles := ceilDiv(n, tile)
	grain := max(1, minParallelWork/(m*k*tile))
	one := func(b, j0, j1 int) { // example b's outputs j0 … j1−1
		aRows := aRowsOf(b)
		c := out[b*m*n:][:m*n]
		base := rhs.batchOff[b]
		if crossContiguous {
			gemvAxpy(aRows, rhs.flat, base+rhs.crossOff[0], rhs.contractOff, c, n, m, k, j0, j1)
		} else {
			gemvDot(aRows, lda, rhs.flat, base+rhs.contractOff[0], rhs.crossOff, c, n, m, k, j0, j1)
		}
	}
	if !gemvPairs[T](batch, m) {
		parallelFor(batch*tiles, grain, workers, func(lo, hi int) {
			for task := lo; task < hi; task++ {
				b, j0 := task/tiles, (task%tiles)*tile
				one(b, j0, min(j0+tile, n))
			}
		})
		return true
	}
	// Examples 2p and 2p+1 in one task, their rows read side by side (gemvpair.go).
	if wide := min(n, max(tile, pairTile)); !crossContiguous && pairTile > 0 && ceilDiv(batch, 2)*ceilDiv(n, wide) >= 2*workers {
		tile, tiles = wide, ceilDiv(n, wide) // while every worker still gets two tasks
	}
	parallelFor(ceilDiv(batch, 2)*tiles, max(1, grain/2), workers, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			b, j0 := 2*(task/tiles), (task%tiles)*tile
			j1 := min(j0+tile, n)
			if b+1 < batch {
				a0, a1 := aRowsOf(b), aRowsOf(b+1)
				c0, c1 := out[b*n:][:n], out[(b+1)*n:][:n]
				b0, b1 := rhs.batchOff[b], rhs.batchOff[b+1]
				if crossContiguous && gemvAxpyPair(a0, a1, rhs.flat, b0+rhs.crossOff[0], b1+rhs.crossOff[0], rhs.contractOff, c0, c1, k, j0, j1) ||
					!crossContiguous && gemvDotPair(a0, a1, rhs.flat, b0+rhs.contractOff[0], b1+rhs.contractOff[0], rhs.crossOff, c0, c1, k, j0, j1) {
					continue
				}
				one(b+1, j0, j1)
			}
			one(b, j0, j1)
		}
	})
	return true
}

// gemvAxpy sets c[i·ldc + j] = Σ_k a[i·k + kk]·b[base + contractOff[kk] + j] for i < m,
// j0 ≤ j < j1 (B rows contiguous along j).
// Exactly 64 columns (attention's dv) go through axpy64, four rows at a time, where it has a
// vector kernel: the same fused multiply-adds in the same order, the outputs held in registers.
func gemvAxpy[T Float](a, b []T, base int, contractOff []int, c []T, ldc, m, k, j0, j1 int) {
	if j1-j0 == 64 {
		i := 0
		for ; i+4 <= m && axpy64(a[i*k:], 4, k, b, base+j0, contractOff, c[i*ldc+j0:], ldc); i += 4 {
		}
		for ; i < m && axpy64(a[i*k:], 1, k, b, base+j0, contractOff, c[i*ldc+j0:], ldc); i++ {
		}
		if i == m {
			return
		}
		a, c, m = a[i*k:], c[i*ldc:], m-i
	}
	for i := range m {
		clear(c[i*ldc+j0 : i*ldc+j1])
	}
	for kk, off := range contractOff {
		x := b[base+off+j0 : base+off+j1]
		for i := range m {
			axpy(c[i*ldc+j0:i*ldc+j1], a[i*k+kk], x)
		}
	}
}

// gemvDot sets c[i·ldc + j] = Σ_k a[i·lda + kk]·b[base + crossOff[j] + kk] for i < m,
// j0 ≤ j < j1 (B rows contiguous along k). Blocks of 4 rows of A × 4 rows of B go through
// dot4x4, fewer rows of A against 4 rows of B and the last rows of B against 4 rows of A
// through dot4, where there is a vector kernel.
func gemvDot[T Float](a []T, lda int, b []T, base int, crossOff []int, c []T, ldc, m, k, j0, j1 int) {
	var four [4]T
	var sixteen [16]T
	var aRows, bRows [4][]T
	j := j0
	// Short B rows (≤ dot4MaxK) a constant stride apart (a decoding step's q·Kᵀ over a cache
	// chunk): each A row streams over the tile's B rows in one call. BenchmarkGEMVDecode on the
	// modern suite's chunks [Hkv, 256, 64], two runs at load ~10, against the loops below (dot4
	// and 4×4 blocks, called per four keys, four B rows side by side): Hkv 32 (1 query row per
	// head) 1.7–2.7 → 5.1–13.7 GB/s, Hkv 8 (4 rows) 3.7–6.9 → 3.7–10.3, Hkv 1 (32 rows)
	// 1.0–1.4 → 1.6–1.8.
	if streamRows && k <= dot4MaxK && j1-j0 >= 4 {
		if stride := uniformStride(crossOff[j0:j1]); stride >= k {
			done := true
			for i := range m {
				if !dotRows(a[i*lda:][:k], b[base+crossOff[j0]:], stride, c[i*ldc+j0:i*ldc+j1]) {
					done = false
					break
				}
			}
			if done {
				return
			}
		}
	}
	for ; j+4 <= j1 && m >= 4; j += 4 {
		for s := range 4 {
			bRows[s] = b[base+crossOff[j+s]:][:k]
		}
		i := 0
		for ; i+4 <= m; i += 4 {
			for r := range 4 {
				aRows[r] = a[(i+r)*lda:][:k]
			}
			if !dot4x4(&aRows, &bRows, &sixteen) {
				break
			}
			for r := range 4 {
				copy(c[(i+r)*ldc+j:][:4], sixteen[4*r:4*r+4])
			}
		}
		for ; i < m; i++ {
			for s := range 4 {
				c[i*ldc+j+s] = dot(a[i*lda:][:k], bRows[s])
			}
		}
	}
	// Fewer than 4 rows of A and short rows (≤ dot4MaxK): each row against 4 rows of B at once
	// (a decoding step's q·Kᵀ over 64 features: one horizontal reduction for four keys instead
	// of one each). Long rows (x·Wᵀ over 2048 features) stream faster that way (dot4Long).
	for ; j+4 <= j1 && m < 4 && (k <= dot4MaxK || dot4Long()); j += 4 {
		for s := range 4 {
			bRows[s] = b[base+crossOff[j+s]:][:k]
		}
		for i := range m {
			if !dot4(bRows[0], bRows[1], bRows[2], bRows[3], a[i*lda:][:k], &four) {
				for s := range 4 {
					four[s] = dot(a[i*lda:][:k], bRows[s])
				}
			}
			copy(c[i*ldc+j:][:4], four[:])
		}
	}
	for ; j < j1; j++ {
		row := b[base+crossOff[j]:][:k]
		i := 0
		for ; i+4 <= m && dot4(a[i*lda:][:k], a[(i+1)*lda:][:k], a[(i+2)*lda:][:k], a[(i+3)*lda:][:k], row, &four); i += 4 {
			c[i*ldc+j], c[(i+1)*ldc+j], c[(i+2)*ldc+j], c[(i+3)*ldc+j] = four[0], four[1], four[2], four[3]
		}
		for ; i < m; i++ {
			c[i*ldc+j] = dot(a[i*lda:][:k], row)
		}
	}
}

// dotRows is dotRowsF32Vec for float32 (false for float64: nothing written).
func dotRows[T Float](a, b []T, ldb int, out []T) bool {
	if af, ok := any(a).([]float32); ok {
		return dotRowsF32Vec(af, any(b).([]float32), ldb, any(out).([]float32))
	}
	return false
}

// axpy64 is axpy64F32Vec for float32 (false for float64: nothing written).
func axpy64[T Float](a []T, rows, k int, b []T, base int, contractOff []int, c []T, ldc int) bool {
	if af, ok := any(a).([]float32); ok {
		return axpy64F32Vec(af, rows, k, any(b).([]float32), base, contractOff, any(c).([]float32), ldc)
	}
	return false
}

// dot4x4 sets out[4r+s] to the dot product of a[r] and b[s] and reports true, or reports false
// (nothing written) where there is no vector kernel (float64, neither AVX-512 nor AVX2+FMA).
func dot4x4[T Float](a, b *[4][]T, out *[16]T) bool {
	if o, ok := any(out).(*[16]float32); ok {
		return dot4x4F32Vec(any(a).(*[4][]float32), any(b).(*[4][]float32), o)
	}
	return false
}

// hasDot4x4 reports whether dot4x4 has a vector kernel for T.
func hasDot4x4[T Float]() bool {
	var x T
	_, f32 := any(x).(float32)
	return f32 && dot4x4F32Vec(&[4][]float32{{}, {}, {}, {}}, &[4][]float32{{}, {}, {}, {}}, &[16]float32{})
}

// dot4 sets out[r] to the dot product of row a_r with b for four rows and reports true, or
// reports false (nothing written) where there is no vector kernel (float64, neither AVX-512
// nor AVX2+FMA).
func dot4[T Float](a0, a1, a2, a3, b []T, out *[4]T) bool {
	if o, ok := any(out).(*[4]float32); ok {
		return dot4F32Vec(any(a0).([]float32), any(a1).([]float32), any(a2).([]float32), any(a3).([]float32), any(b).([]float32), o)
	}
	return false
}

// axpy adds s·x to dst (len(dst) == len(x)).
func axpy[T Float](dst []T, s T, x []T) {
	if d, ok := any(dst).([]float32); ok && axpyF32Vec(d, float32(s), any(x).([]float32)) {
		return
	}
	x = x[:len(dst)]
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		dst[i] += s * x[i]
		dst[i+1] += s * x[i+1]
		dst[i+2] += s * x[i+2]
		dst[i+3] += s * x[i+3]
	}
	for ; i < len(dst); i++ {
		dst[i] += s * x[i]
	}
}

// dot returns Σ a[i]·b[i] (len(a) == len(b)).
func dot[T Float](a, b []T) T {
	if af, ok := any(a).([]float32); ok {
		if v, ok := dotF32Vec(af, any(b).([]float32)); ok {
			return T(v)
		}
	}
	b = b[:len(a)]
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
