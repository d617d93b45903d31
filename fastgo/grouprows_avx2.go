//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"simd/archsimd"
	"unsafe"
)

// AVX2 kernel of groupRows' weighted sum (grouprows.go): weightRows64 in 256-bit vectors, for
// CPUs with AVX2+FMA but no AVX-512. (The scores go through dotRowsF32Vec, which has its AVX2
// loop in dotrows_avx2.go.)

// weightRows64AVX2 is weightRows64 in 256-bit vectors: out[i·ldo + c] = Σ_j w[i·ldw + j]·v[j·ldv
// + c] for i < g, c < 64, j < n, the value rows in blocks of groupBlockRows, each block against
// every pair of weight rows while it is in L1 — a pair in two halves of 32 columns (8
// accumulators; the AVX-512 kernel's 2 rows × 64 columns would be 16 here).
func weightRows64AVX2(w []float32, ldw, g int, v []float32, ldv, n int, out []float32, ldo int) {
	_ = w[(g-1)*ldw+n-1]
	_ = v[(n-1)*ldv+63]
	_ = out[(g-1)*ldo+63]
	for j0 := 0; j0 < n; j0 += groupBlockRows {
		j1 := min(j0+groupBlockRows, n)
		for i := 0; i < g; i += 2 {
			rows := min(2, g-i)
			weightPair32AVX2(w[i*ldw:], ldw, rows, v, ldv, j0, j1, out[i*ldo:], ldo)
			weightPair32AVX2(w[i*ldw:], ldw, rows, v[32:], ldv, j0, j1, out[i*ldo+32:], ldo)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// weightPair32AVX2 is weightRows64AVX2 for rows 1 or 2, 32 columns (of v and out, from their
// starts) and value rows j0 … j1−1, adding to out unless j0 == 0. The value rows and weights
// are read through unsafe pointers after one bounds check each (ldF32x8, kernel_simd.go):
// sliced, each row cost an address computation, a bounds check and the slice-end masking
// (objdump). BenchmarkGroupRowsDecode/weighted against the sliced loop, alternated in one run
// (load ~2.6): Hkv 8 71.2 → 60.5 CPU-µs, Hkv 1 37.6 → 28.4.
func weightPair32AVX2(w []float32, ldw, rows int, v []float32, ldv, j0, j1 int, out []float32, ldo int) {
	var c00, c01, c02, c03, c10, c11, c12, c13 archsimd.Float32x8
	o0, o1 := out[:32], out[:32]
	w0, w1 := w[:j1], w[:j1]
	if rows == 2 {
		o1, w1 = out[ldo:][:32], w[ldw:][:j1]
	}
	if j0 > 0 {
		c00 = archsimd.LoadFloat32x8((*[8]float32)(o0[0:8]))
		c01 = archsimd.LoadFloat32x8((*[8]float32)(o0[8:16]))
		c02 = archsimd.LoadFloat32x8((*[8]float32)(o0[16:24]))
		c03 = archsimd.LoadFloat32x8((*[8]float32)(o0[24:32]))
		c10 = archsimd.LoadFloat32x8((*[8]float32)(o1[0:8]))
		c11 = archsimd.LoadFloat32x8((*[8]float32)(o1[8:16]))
		c12 = archsimd.LoadFloat32x8((*[8]float32)(o1[16:24]))
		c13 = archsimd.LoadFloat32x8((*[8]float32)(o1[24:32]))
	}
	// The rows of v and the weights through unsafe pointers, after one bounds check each (as
	// dotRows64AVX2): sliced, each row cost an address computation and a bounds check.
	_, _, _ = v[(j1-1)*ldv+31], w0[j1-1], w1[j1-1]
	pv := unsafe.Pointer(unsafe.SliceData(v[j0*ldv:]))
	pw0, pw1 := unsafe.Pointer(unsafe.SliceData(w0[j0:])), unsafe.Pointer(unsafe.SliceData(w1[j0:]))
	stride := uintptr(ldv) * 4
	for i := range j1 - j0 {
		y0, y1, y2, y3 := ldF32x8(pv, 0), ldF32x8(pv, 32), ldF32x8(pv, 64), ldF32x8(pv, 96)
		s0 := archsimd.BroadcastFloat32x8(*(*float32)(pw0))
		c00 = y0.MulAdd(s0, c00)
		c01 = y1.MulAdd(s0, c01)
		c02 = y2.MulAdd(s0, c02)
		c03 = y3.MulAdd(s0, c03)
		s1 := archsimd.BroadcastFloat32x8(*(*float32)(pw1))
		c10 = y0.MulAdd(s1, c10)
		c11 = y1.MulAdd(s1, c11)
		c12 = y2.MulAdd(s1, c12)
		c13 = y3.MulAdd(s1, c13)
		if i+1 < j1-j0 { // never past the ends: the GC (and -race's checkptr) rejects such a pointer
			pv, pw0, pw1 = unsafe.Add(pv, stride), unsafe.Add(pw0, 4), unsafe.Add(pw1, 4)
		}
	}
	// With one row, o1 is o0 and the second row (a copy of the first) is stored first.
	c10.Store((*[8]float32)(o1[0:8]))
	c11.Store((*[8]float32)(o1[8:16]))
	c12.Store((*[8]float32)(o1[16:24]))
	c13.Store((*[8]float32)(o1[24:32]))
	c00.Store((*[8]float32)(o0[0:8]))
	c01.Store((*[8]float32)(o0[8:16]))
	c02.Store((*[8]float32)(o0[16:24]))
	c03.Store((*[8]float32)(o0[24:32]))
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}
