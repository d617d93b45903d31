//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import "simd/archsimd"

// hasPairKernels reports whether the pair kernels (gemvpair.go) run here: with AVX-512.
func hasPairKernels() bool { return vecAVX512 }

// dotRows64PairF32Vec sets out0[j] = Σ_i a0[i]·b0[j·ldb + i] and out1[j] likewise from a1 and
// b1, for 64 features (len(a0) = len(a1) = 64) and j < len(out0) = len(out1), with the
// operations of dotRows64 on each: four rows of b0, then four of b1, each row's sum one vector
// of products and three fused multiply-adds reduced to one lane. False (nothing written) without
// AVX-512. len(b0), len(b1) ≥ (len(out0)−1)·ldb + 64.
func dotRows64PairF32Vec(a0, a1, b0, b1 []float32, ldb int, out0, out1 []float32) bool {
	if !vecAVX512 {
		return false
	}
	n := len(out0)
	out1 = out1[:n]
	if n == 0 {
		return true
	}
	b0, b1 = b0[:(n-1)*ldb+64], b1[:(n-1)*ldb+64]
	x := [4]archsimd.Float32x16{archsimd.LoadFloat32x16((*[16]float32)(a0[0:16])), archsimd.LoadFloat32x16((*[16]float32)(a0[16:32])),
		archsimd.LoadFloat32x16((*[16]float32)(a0[32:48])), archsimd.LoadFloat32x16((*[16]float32)(a0[48:64]))}
	y := [4]archsimd.Float32x16{archsimd.LoadFloat32x16((*[16]float32)(a1[0:16])), archsimd.LoadFloat32x16((*[16]float32)(a1[16:32])),
		archsimd.LoadFloat32x16((*[16]float32)(a1[32:48])), archsimd.LoadFloat32x16((*[16]float32)(a1[48:64]))}
	row := func(r []float32, a *[4]archsimd.Float32x16) archsimd.Float32x16 { // dotRows64's row
		r = r[:64]
		s := archsimd.LoadFloat32x16((*[16]float32)(r[0:16])).Mul(a[0])
		s = archsimd.LoadFloat32x16((*[16]float32)(r[16:32])).MulAdd(a[1], s)
		s = archsimd.LoadFloat32x16((*[16]float32)(r[32:48])).MulAdd(a[2], s)
		return archsimd.LoadFloat32x16((*[16]float32)(r[48:64])).MulAdd(a[3], s)
	}
	four := func(b []float32, a *[4]archsimd.Float32x16, out *[4]float32) { // dotRows64's four rows
		s0, s1, s2, s3 := row(b, a), row(b[ldb:], a), row(b[2*ldb:], a), row(b[3*ldb:], a)
		lo := quarter(s0).AddPairs(quarter(s1))
		hi := quarter(s2).AddPairs(quarter(s3))
		lo.AddPairs(hi).Store(out)
	}
	j := 0
	for ; j+4 <= n; j += 4 {
		four(b0[j*ldb:], &x, (*[4]float32)(out0[j:j+4]))
		four(b1[j*ldb:], &y, (*[4]float32)(out1[j:j+4]))
	}
	for ; j < n; j++ {
		out0[j], _ = dotF32Vec(a0, b0[j*ldb:][:64])
		out1[j], _ = dotF32Vec(a1, b1[j*ldb:][:64])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
	return true
}

// axpy64PairF32Vec sets c0[j] = Σ_kk a0[kk]·b0[kk·ld + j] and c1[j] likewise from a1 and b1, for
// j < 64 and kk < len(a0) = len(a1), each output one chain of fused multiply-adds in kk order
// (axpy64x1's), the rows of b0 and b1 read side by side. False (nothing written) without
// AVX-512. len(b0), len(b1) ≥ (len(a0)−1)·ld + 64.
func axpy64PairF32Vec(a0, a1, b0, b1 []float32, ld int, c0, c1 []float32) bool {
	if !vecAVX512 {
		return false
	}
	k := len(a0)
	a1 = a1[:k]
	if k == 0 {
		clear(c0[:64])
		clear(c1[:64])
		return true
	}
	b0, b1 = b0[:(k-1)*ld+64], b1[:(k-1)*ld+64]
	var c00, c01, c02, c03, c10, c11, c12, c13 archsimd.Float32x16
	for kk := range k {
		x := b0[kk*ld:][:64]
		s0 := archsimd.BroadcastFloat32x16(a0[kk])
		c00 = archsimd.LoadFloat32x16((*[16]float32)(x[0:16])).MulAdd(s0, c00)
		c01 = archsimd.LoadFloat32x16((*[16]float32)(x[16:32])).MulAdd(s0, c01)
		c02 = archsimd.LoadFloat32x16((*[16]float32)(x[32:48])).MulAdd(s0, c02)
		c03 = archsimd.LoadFloat32x16((*[16]float32)(x[48:64])).MulAdd(s0, c03)
		y := b1[kk*ld:][:64]
		s1 := archsimd.BroadcastFloat32x16(a1[kk])
		c10 = archsimd.LoadFloat32x16((*[16]float32)(y[0:16])).MulAdd(s1, c10)
		c11 = archsimd.LoadFloat32x16((*[16]float32)(y[16:32])).MulAdd(s1, c11)
		c12 = archsimd.LoadFloat32x16((*[16]float32)(y[32:48])).MulAdd(s1, c12)
		c13 = archsimd.LoadFloat32x16((*[16]float32)(y[48:64])).MulAdd(s1, c13)
	}
	c0, c1 = c0[:64], c1[:64]
	c00.Store((*[16]float32)(c0[0:16]))
	c01.Store((*[16]float32)(c0[16:32]))
	c02.Store((*[16]float32)(c0[32:48]))
	c03.Store((*[16]float32)(c0[48:64]))
	c10.Store((*[16]float32)(c1[0:16]))
	c11.Store((*[16]float32)(c1[16:32]))
	c12.Store((*[16]float32)(c1[32:48]))
	c13.Store((*[16]float32)(c1[48:64]))
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
	return true
}
