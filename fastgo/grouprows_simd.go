//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"simd/archsimd"
	"unsafe"
)

// AVX-512 kernels of groupRows (grouprows.go), with simd/archsimd (same build constraints as
// kernel_simd.go); their 256-bit twins run where AVX-512 is absent (grouprows_avx2.go).

// hasGroupRows reports whether groupRows has its kernels (AVX-512, or AVX2 with FMA).
func hasGroupRows() bool { return vecAVX512 || vecAVX2 }

// weightRows64 sets out[i·ldo + c] = Σ_j w[i·ldw + j]·v[j·ldv + c] for i < g, c < 64, j < n:
// g rows of attention weights times n value rows of 64 features. The value rows go in blocks of
// groupBlockRows, each block against every pair of weight rows while it is in L1; a pair's 8
// output vectors stay in registers within a block and in out between blocks. Without AVX-512,
// weightRows64AVX2 (hasGroupRows reports whether either runs).
func weightRows64(w []float32, ldw, g int, v []float32, ldv, n int, out []float32, ldo int) {
	if !vecAVX512 {
		weightRows64AVX2(w, ldw, g, v, ldv, n, out, ldo)
		return
	}
	_ = w[(g-1)*ldw+n-1]
	_ = v[(n-1)*ldv+63]
	_ = out[(g-1)*ldo+63]
	for j0 := 0; j0 < n; j0 += groupBlockRows {
		j1 := min(j0+groupBlockRows, n)
		for i := 0; i < g; i += 2 {
			rows := min(2, g-i)
			weightPair64(w[i*ldw:], ldw, rows, v, ldv, j0, j1, out[i*ldo:], ldo)
		}
	}
	archsimd.ClearAVXUpperBits() // (gemv_simd.go)
}

// weightPair64 is weightRows64 for rows 1 or 2 and value rows j0 … j1−1, adding to out unless
// j0 == 0 (8 accumulators: with 4 rows, 16, gemv's axpy64x2 measured the compiler spilling).
func weightPair64(w []float32, ldw, rows int, v []float32, ldv, j0, j1 int, out []float32, ldo int) {
	var c00, c01, c02, c03, c10, c11, c12, c13 archsimd.Float32x16
	o0, o1 := out[:64], out[:64]
	w0, w1 := w[:j1], w[:j1]
	if rows == 2 {
		o1, w1 = out[ldo:][:64], w[ldw:][:j1]
	}
	if j0 > 0 {
		c00 = archsimd.LoadFloat32x16((*[16]float32)(o0[0:16]))
		c01 = archsimd.LoadFloat32x16((*[16]float32)(o0[16:32]))
		c02 = archsimd.LoadFloat32x16((*[16]float32)(o0[32:48]))
		c03 = archsimd.LoadFloat32x16((*[16]float32)(o0[48:64]))
		c10 = archsimd.LoadFloat32x16((*[16]float32)(o1[0:16]))
		c11 = archsimd.LoadFloat32x16((*[16]float32)(o1[16:32]))
		c12 = archsimd.LoadFloat32x16((*[16]float32)(o1[32:48]))
		c13 = archsimd.LoadFloat32x16((*[16]float32)(o1[48:64]))
	}
	for j := j0; j < j1; j++ {
		x := v[j*ldv:][:64]
		y0 := archsimd.LoadFloat32x16((*[16]float32)(x[0:16]))
		y1 := archsimd.LoadFloat32x16((*[16]float32)(x[16:32]))
		y2 := archsimd.LoadFloat32x16((*[16]float32)(x[32:48]))
		y3 := archsimd.LoadFloat32x16((*[16]float32)(x[48:64]))
		s0 := archsimd.BroadcastFloat32x16(w0[j])
		c00, c01, c02, c03 = y0.MulAdd(s0, c00), y1.MulAdd(s0, c01), y2.MulAdd(s0, c02), y3.MulAdd(s0, c03)
		s1 := archsimd.BroadcastFloat32x16(w1[j])
		c10, c11, c12, c13 = y0.MulAdd(s1, c10), y1.MulAdd(s1, c11), y2.MulAdd(s1, c12), y3.MulAdd(s1, c13)
	}
	// With one row, o1 is o0 and the second row (a copy of the first) is stored first.
	c10.Store((*[16]float32)(o1[0:16]))
	c11.Store((*[16]float32)(o1[16:32]))
	c12.Store((*[16]float32)(o1[32:48]))
	c13.Store((*[16]float32)(o1[48:64]))
	c00.Store((*[16]float32)(o0[0:16]))
	c01.Store((*[16]float32)(o0[16:32]))
	c02.Store((*[16]float32)(o0[32:48]))
	c03.Store((*[16]float32)(o0[48:64]))
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// prefetchF32 asks the CPU to bring x's cache lines into its caches (prefetchLines: a hint,
// which reads nothing the program sees).
func prefetchF32(x []float32) {
	if len(x) > 0 {
		prefetchLines(unsafe.Pointer(unsafe.SliceData(x)), 4*len(x))
	}
}
