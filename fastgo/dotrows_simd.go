//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import "simd/archsimd"

// dotRowsF32Vec sets out[j] = Σ_i a[i]·b[j·ldb + i] for j < len(out) — one row of A against
// len(out) rows of B that lie ldb apart (a decoding step's q·Kᵀ over a cache chunk: one query
// against 256 keys of 64 features) — and reports true, or false (nothing written) without
// AVX-512 or AVX2+FMA (dotRowsF32AVX2). len(b) ≥ (len(out)−1)·ldb + len(a). With 64 features
// (dotRows64) the rows stream in address order; other lengths go four rows at a time through
// dot4F32Vec.
func dotRowsF32Vec(a, b []float32, ldb int, out []float32) bool {
	if !vecAVX512 {
		return dotRowsF32AVX2(a, b, ldb, out)
	}
	n, k := len(out), len(a)
	if n == 0 {
		return true
	}
	_ = b[(n-1)*ldb+k-1]
	if k == 64 {
		dotRows64(a, b, ldb, out)
		archsimd.ClearAVXUpperBits() // (gemv_simd.go)
		return true
	}
	j := 0
	for ; j+4 <= n; j += 4 {
		dot4F32Vec(b[j*ldb:][:k], b[(j+1)*ldb:][:k], b[(j+2)*ldb:][:k], b[(j+3)*ldb:][:k], a, (*[4]float32)(out[j:j+4]))
	}
	for ; j < n; j++ {
		out[j], _ = dotF32Vec(a, b[j*ldb:][:k])
	}
	return true
}

// dotRows64 is dotRowsF32Vec for len(a) == 64: a lives in four registers and each row of B is
// read whole (four loads, one multiply and three fused multiply-adds into one vector) before the
// next, so B streams in address order. dot4F32Vec, called once per four keys and reading them
// side by side, measured 4.7 GB/s on a 2 MB chunk [32, 256, 64]; this loop 13–18 GB/s
// (BenchmarkGEMVDecode).
func dotRows64(a, b []float32, ldb int, out []float32) {
	a0 := archsimd.LoadFloat32x16((*[16]float32)(a[0:16]))
	a1 := archsimd.LoadFloat32x16((*[16]float32)(a[16:32]))
	a2 := archsimd.LoadFloat32x16((*[16]float32)(a[32:48]))
	a3 := archsimd.LoadFloat32x16((*[16]float32)(a[48:64]))
	row := func(r []float32) archsimd.Float32x16 {
		r = r[:64]
		s := archsimd.LoadFloat32x16((*[16]float32)(r[0:16])).Mul(a0)
		s = archsimd.LoadFloat32x16((*[16]float32)(r[16:32])).MulAdd(a1, s)
		s = archsimd.LoadFloat32x16((*[16]float32)(r[32:48])).MulAdd(a2, s)
		return archsimd.LoadFloat32x16((*[16]float32)(r[48:64])).MulAdd(a3, s)
	}
	n := len(out)
	j := 0
	for ; j+4 <= n; j += 4 {
		s0, s1, s2, s3 := row(b[j*ldb:]), row(b[(j+1)*ldb:]), row(b[(j+2)*ldb:]), row(b[(j+3)*ldb:])
		lo := quarter(s0).AddPairs(quarter(s1))
		hi := quarter(s2).AddPairs(quarter(s3))
		lo.AddPairs(hi).Store((*[4]float32)(out[j : j+4]))
	}
	for ; j < n; j++ {
		out[j], _ = dotF32Vec(a, b[j*ldb:][:64])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}
