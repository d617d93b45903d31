//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"simd/archsimd"
	"unsafe"
)

// dotRowsF32AVX2 is dotRowsF32Vec in 256-bit vectors: out[j] = Σ_i a[i]·b[j·ldb + i] for j <
// len(out), true; false (nothing written) without AVX2+FMA. len(b) ≥ (len(out)−1)·ldb +
// len(a). With 64 features (dotRows64AVX2) the rows stream in address order; other lengths go
// four rows at a time through dot4F32AVX2.
func dotRowsF32AVX2(a, b []float32, ldb int, out []float32) bool {
	if !vecAVX2 {
		return false
	}
	n, k := len(out), len(a)
	if n == 0 {
		return true
	}
	_ = b[(n-1)*ldb+k-1]
	if k == 64 {
		dotRows64AVX2(a, b, ldb, out)
		archsimd.ClearAVXUpperBits() // (gemv_avx2.go)
		return true
	}
	j := 0
	for ; j+4 <= n; j += 4 {
		dot4F32AVX2(b[j*ldb:][:k], b[(j+1)*ldb:][:k], b[(j+2)*ldb:][:k], b[(j+3)*ldb:][:k], a, (*[4]float32)(out[j:j+4]))
	}
	for ; j < n; j++ {
		out[j], _ = dotF32AVX2(a, b[j*ldb:][:k])
	}
	return true // (dot4F32AVX2 and dotF32AVX2 clear the upper register halves)
}

// dotRows64AVX2 is dotRowsF32AVX2 for len(a) == 64, as dotRows64: a lives in eight registers
// and each row of B is read whole (eight loads into two chains of fused multiply-adds) before
// the next, four rows per step (8 chains: 16 registers with a's). The rows are read through an
// unsafe pointer after one bounds check of the last (ldF32x8, kernel_simd.go): sliced rows cost
// an address computation and a bounds check per load (objdump: LEAQ, the slice-end masking),
// BenchmarkGroupRowsDecode/scores against the sliced loop, alternated in one run (load ~2.6):
// Hkv 8 71.6 → 63.1 CPU-µs, Hkv 1 39.5 → 31.6.
func dotRows64AVX2(a, b []float32, ldb int, out []float32) {
	a = a[:64]
	a0 := archsimd.LoadFloat32x8((*[8]float32)(a[0:8]))
	a1 := archsimd.LoadFloat32x8((*[8]float32)(a[8:16]))
	a2 := archsimd.LoadFloat32x8((*[8]float32)(a[16:24]))
	a3 := archsimd.LoadFloat32x8((*[8]float32)(a[24:32]))
	a4 := archsimd.LoadFloat32x8((*[8]float32)(a[32:40]))
	a5 := archsimd.LoadFloat32x8((*[8]float32)(a[40:48]))
	a6 := archsimd.LoadFloat32x8((*[8]float32)(a[48:56]))
	a7 := archsimd.LoadFloat32x8((*[8]float32)(a[56:64]))
	row := func(p unsafe.Pointer) archsimd.Float32x8 {
		s := ldF32x8(p, 0).Mul(a0)
		t := ldF32x8(p, 32).Mul(a1)
		s = ldF32x8(p, 64).MulAdd(a2, s)
		t = ldF32x8(p, 96).MulAdd(a3, t)
		s = ldF32x8(p, 128).MulAdd(a4, s)
		t = ldF32x8(p, 160).MulAdd(a5, t)
		s = ldF32x8(p, 192).MulAdd(a6, s)
		t = ldF32x8(p, 224).MulAdd(a7, t)
		return s.Add(t)
	}
	n := len(out)
	if n == 0 {
		return
	}
	_ = b[(n-1)*ldb+63] // every row below is in b
	p := unsafe.Pointer(unsafe.SliceData(b))
	stride := uintptr(ldb) * 4
	j := 0
	for ; j+4 <= n; j += 4 {
		s0, s1, s2, s3 := row(p), row(unsafe.Add(p, stride)), row(unsafe.Add(p, 2*stride)), row(unsafe.Add(p, 3*stride))
		sum4x8(s0, s1, s2, s3).Store((*[4]float32)(out[j : j+4]))
		if j+4 < n { // never past b's end: the GC (and -race's checkptr) rejects such a pointer
			p = unsafe.Add(p, 4*stride)
		}
	}
	for ; j < n; j++ {
		out[j], _ = dotF32AVX2(a, b[j*ldb:][:64])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}
