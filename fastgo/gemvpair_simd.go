//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import "simd/archsimd"

// hasPairKernels reports whether the pair kernels (gemvpair.go) run here: with AVX-512.
func hasPairKernels() bool { return vecAVX512 }

// dotRows64PairF32Vec sets out0[j] = Σ_i a0[i]·b0[j·ldb + i] and out1[j] likewise from a1 and
// b1, for 64 features (len(a0) = len(a1) = 64) and j < len(out0) = len(out1), with the
// operations of dotRows64 on each (dotFour64): four rows of b0, then four of b1. False (nothing
// written) without AVX-512. len(b0), len(b1) ≥ (len(out0)−1)·ldb + 64.
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
	x, y := load64(a0), load64(a1)
	j := 0
	for ; j+4 <= n; j += 4 {
		dotFour64(b0[j*ldb:], ldb, &x, (*[4]float32)(out0[j:j+4]))
		dotFour64(b1[j*ldb:], ldb, &y, (*[4]float32)(out1[j:j+4]))
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

// row64 is a row of 64 values in four vectors. load64, dot64 and dotFour64 are dotRows64's row
// and four-row steps for the pair kernel, which keeps two such rows; dotRows64 keeps its own
// copy with a's vectors in locals (through a pointer there BenchmarkGEMVPair/qk/pairs=false read
// 22.9–23.3 GB/s against 24.8–26.3, three runs alternated).
type row64 = [4]archsimd.Float32x16

// load64 loads a[0:64].
func load64(a []float32) row64 {
	a = a[:64]
	return row64{archsimd.LoadFloat32x16((*[16]float32)(a[0:16])), archsimd.LoadFloat32x16((*[16]float32)(a[16:32])),
		archsimd.LoadFloat32x16((*[16]float32)(a[32:48])), archsimd.LoadFloat32x16((*[16]float32)(a[48:64]))}
}

// dot64 is r[0:64]·a as one vector of partial sums: one multiply and three fused multiply-adds.
func dot64(r []float32, a *row64) archsimd.Float32x16 {
	r = r[:64]
	s := archsimd.LoadFloat32x16((*[16]float32)(r[0:16])).Mul(a[0])
	s = archsimd.LoadFloat32x16((*[16]float32)(r[16:32])).MulAdd(a[1], s)
	s = archsimd.LoadFloat32x16((*[16]float32)(r[32:48])).MulAdd(a[2], s)
	return archsimd.LoadFloat32x16((*[16]float32)(r[48:64])).MulAdd(a[3], s)
}

// dotFour64 sets out[i] to the dot product of a with the row of 64 values at b[i·ldb:], i < 4,
// each reduced 16 → 4 lanes, then pairwise.
func dotFour64(b []float32, ldb int, a *row64, out *[4]float32) {
	s0, s1, s2, s3 := dot64(b, a), dot64(b[ldb:], a), dot64(b[2*ldb:], a), dot64(b[3*ldb:], a)
	lo := quarter(s0).AddPairs(quarter(s1))
	hi := quarter(s2).AddPairs(quarter(s3))
	lo.AddPairs(hi).Store(out)
}
