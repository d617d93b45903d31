//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// AVX-512 loops of gemv (gemv.go), with simd/archsimd (same build constraints as kernel_simd.go);
// without AVX-512 each calls its 256-bit twin (gemv_avx2.go), which reports false without
// AVX2+FMA, and gemv uses plain Go. Each ends with VZEROUPPER (archsimd.ClearAVXUpperBits), as
// the AVX2 kernels do (gemv_avx2.go): SSE code after dirty upper register halves ran many times
// slower on an AVX2 EPYC; on AVX-512 CPUs it is the usual exit of vector code (not measured).

import "simd/archsimd"

// axpyF32Vec adds s·x to dst with fused multiply-adds and reports true, or reports false (and
// does nothing) without AVX-512 or AVX2+FMA (axpyF32AVX2). len(x) ≥ len(dst).
func axpyF32Vec(dst []float32, s float32, x []float32) bool {
	if !vecAVX512 {
		return axpyF32AVX2(dst, s, x)
	}
	sv := archsimd.BroadcastFloat32x16(s)
	n := len(dst)
	x = x[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		d0 := archsimd.LoadFloat32x16((*[16]float32)(dst[i : i+16]))
		d1 := archsimd.LoadFloat32x16((*[16]float32)(dst[i+16 : i+32]))
		x0 := archsimd.LoadFloat32x16((*[16]float32)(x[i : i+16]))
		x1 := archsimd.LoadFloat32x16((*[16]float32)(x[i+16 : i+32]))
		x0.MulAdd(sv, d0).Store((*[16]float32)(dst[i : i+16]))
		x1.MulAdd(sv, d1).Store((*[16]float32)(dst[i+16 : i+32]))
	}
	for ; i+16 <= n; i += 16 {
		d := archsimd.LoadFloat32x16((*[16]float32)(dst[i : i+16]))
		archsimd.LoadFloat32x16((*[16]float32)(x[i:i+16])).MulAdd(sv, d).Store((*[16]float32)(dst[i : i+16]))
	}
	if i < n {
		d := loadPartF32x16(dst[i:n])
		storePartF32x16(loadPartF32x16(x[i:n]).MulAdd(sv, d), dst[i:n])
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// dotF32Vec returns Σ a[i]·b[i] (fused multiply-adds in four vector accumulators) and true, or
// false without AVX-512 or AVX2+FMA (dotF32AVX2). len(b) ≥ len(a).
func dotF32Vec(a, b []float32) (float32, bool) {
	if !vecAVX512 {
		return dotF32AVX2(a, b)
	}
	n := len(a)
	b = b[:n]
	var acc0, acc1, acc2, acc3 archsimd.Float32x16
	i := 0
	for ; i+64 <= n; i += 64 {
		acc0 = archsimd.LoadFloat32x16((*[16]float32)(a[i:i+16])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(b[i:i+16])), acc0)
		acc1 = archsimd.LoadFloat32x16((*[16]float32)(a[i+16:i+32])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(b[i+16:i+32])), acc1)
		acc2 = archsimd.LoadFloat32x16((*[16]float32)(a[i+32:i+48])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(b[i+32:i+48])), acc2)
		acc3 = archsimd.LoadFloat32x16((*[16]float32)(a[i+48:i+64])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(b[i+48:i+64])), acc3)
	}
	for ; i+16 <= n; i += 16 {
		acc0 = archsimd.LoadFloat32x16((*[16]float32)(a[i:i+16])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(b[i:i+16])), acc0)
	}
	if i < n {
		acc1 = loadPartF32x16(a[i:n]).MulAdd(loadPartF32x16(b[i:n]), acc1)
	}
	acc := acc0.Add(acc1).Add(acc2.Add(acc3))
	x8 := acc.GetLo().Add(acc.GetHi()) // 16 → 8 → 4 lanes, then pairwise
	x4 := x8.GetLo().Add(x8.GetHi())
	x4 = x4.AddPairs(x4)
	var lanes [4]float32
	x4.Store(&lanes)
	archsimd.ClearAVXUpperBits() // after the store, before the scalar code (doc.go, "Clean upper halves")
	return lanes[0] + lanes[1], true
}

// dot4F32Vec sets out[r] = Σ a_r[i]·b[i] for the four rows a0 … a3 (each len(a0) long) against
// one b — four dot products that share b's loads and one horizontal reduction — and reports
// true, or false (nothing written) without AVX-512 or AVX2+FMA (dot4F32AVX2). len(b) ≥ len(a0).
func dot4F32Vec(a0, a1, a2, a3, b []float32, out *[4]float32) bool {
	if !vecAVX512 {
		return dot4F32AVX2(a0, a1, a2, a3, b, out)
	}
	n := len(a0)
	a1, a2, a3, b = a1[:n], a2[:n], a3[:n], b[:n]
	var s0, s1, s2, s3 archsimd.Float32x16
	i := 0
	for ; i+16 <= n; i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(b[i : i+16]))
		s0 = archsimd.LoadFloat32x16((*[16]float32)(a0[i:i+16])).MulAdd(x, s0)
		s1 = archsimd.LoadFloat32x16((*[16]float32)(a1[i:i+16])).MulAdd(x, s1)
		s2 = archsimd.LoadFloat32x16((*[16]float32)(a2[i:i+16])).MulAdd(x, s2)
		s3 = archsimd.LoadFloat32x16((*[16]float32)(a3[i:i+16])).MulAdd(x, s3)
	}
	if i < n {
		x := loadPartF32x16(b[i:n])
		s0 = loadPartF32x16(a0[i:n]).MulAdd(x, s0)
		s1 = loadPartF32x16(a1[i:n]).MulAdd(x, s1)
		s2 = loadPartF32x16(a2[i:n]).MulAdd(x, s2)
		s3 = loadPartF32x16(a3[i:n]).MulAdd(x, s3)
	}
	// 16 → 4 lanes per row, then pairwise: [s0 s0 s1 s1], [s2 s2 s3 s3] → [s0 s1 s2 s3].
	lo := quarter(s0).AddPairs(quarter(s1))
	hi := quarter(s2).AddPairs(quarter(s3))
	lo.AddPairs(hi).Store(out)
	archsimd.ClearAVXUpperBits()
	return true
}

// dot4x4F32Vec sets out[4r+s] = Σ a[r][i]·b[s][i] for four rows of A and four rows of B (each
// len(a[0]) long) and reports true, or false (nothing written) without AVX-512 or AVX2+FMA
// (dot4x4F32AVX2). It runs as two blocks of 2 rows × 4 (8 accumulators: with 16 the compiler
// spilled them to the stack, it allocates 16 vector registers).
func dot4x4F32Vec(a, b *[4][]float32, out *[16]float32) bool {
	if !vecAVX512 {
		return dot4x4F32AVX2(a, b, out)
	}
	dot2x4(a[0], a[1], b, (*[8]float32)(out[0:8]))
	dot2x4(a[2], a[3], b, (*[8]float32)(out[8:16]))
	archsimd.ClearAVXUpperBits()
	return true
}

// dot2x4 sets out[4r+s] = Σ a_r[i]·b[s][i] for r < 2, s < 4 (AVX-512).
func dot2x4(a0, a1 []float32, b *[4][]float32, out *[8]float32) {
	n := len(a0)
	a1 = a1[:n]
	b0, b1, b2, b3 := b[0][:n], b[1][:n], b[2][:n], b[3][:n]
	var s00, s01, s02, s03, s10, s11, s12, s13 archsimd.Float32x16
	i := 0
	for ; i+16 <= n; i += 16 {
		x0 := archsimd.LoadFloat32x16((*[16]float32)(a0[i : i+16]))
		x1 := archsimd.LoadFloat32x16((*[16]float32)(a1[i : i+16]))
		y0 := archsimd.LoadFloat32x16((*[16]float32)(b0[i : i+16]))
		y1 := archsimd.LoadFloat32x16((*[16]float32)(b1[i : i+16]))
		y2 := archsimd.LoadFloat32x16((*[16]float32)(b2[i : i+16]))
		y3 := archsimd.LoadFloat32x16((*[16]float32)(b3[i : i+16]))
		s00, s01, s02, s03 = x0.MulAdd(y0, s00), x0.MulAdd(y1, s01), x0.MulAdd(y2, s02), x0.MulAdd(y3, s03)
		s10, s11, s12, s13 = x1.MulAdd(y0, s10), x1.MulAdd(y1, s11), x1.MulAdd(y2, s12), x1.MulAdd(y3, s13)
	}
	if i < n {
		x0 := loadPartF32x16(a0[i:n])
		x1 := loadPartF32x16(a1[i:n])
		y0 := loadPartF32x16(b0[i:n])
		y1 := loadPartF32x16(b1[i:n])
		y2 := loadPartF32x16(b2[i:n])
		y3 := loadPartF32x16(b3[i:n])
		s00, s01, s02, s03 = x0.MulAdd(y0, s00), x0.MulAdd(y1, s01), x0.MulAdd(y2, s02), x0.MulAdd(y3, s03)
		s10, s11, s12, s13 = x1.MulAdd(y0, s10), x1.MulAdd(y1, s11), x1.MulAdd(y2, s12), x1.MulAdd(y3, s13)
	}
	// Per row of A: 16 → 4 lanes for each of its four sums, then pairwise to [s0 s1 s2 s3].
	quarter(s00).AddPairs(quarter(s01)).AddPairs(quarter(s02).AddPairs(quarter(s03))).Store((*[4]float32)(out[0:4]))
	quarter(s10).AddPairs(quarter(s11)).AddPairs(quarter(s12).AddPairs(quarter(s13))).Store((*[4]float32)(out[4:8]))
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// quarter adds the four quarters of s: lane i of the result is s[i] + s[i+4] + s[i+8] + s[i+12].
func quarter(s archsimd.Float32x16) archsimd.Float32x4 {
	h := s.GetLo().Add(s.GetHi())
	return h.GetLo().Add(h.GetHi())
}

// axpy64F32Vec sets c[r·ldc + j] = Σ_kk a[r·k + kk]·b[base + contractOff[kk] + j] for r < rows
// (1 or 4) and j < 64 — the axpy form of gemv for 64 output columns (attention's dv = 64) with the
// outputs in registers over the whole contracting axis — and reports true, or false (nothing
// written) without AVX-512 or AVX2+FMA (axpy64F32AVX2) or for another number of rows.
func axpy64F32Vec(a []float32, rows, k int, b []float32, base int, contractOff []int, c []float32, ldc int) bool {
	if !vecAVX512 {
		return axpy64F32AVX2(a, rows, k, b, base, contractOff, c, ldc)
	}
	if len(contractOff) != k {
		return false
	}
	switch rows {
	case 4:
		axpy64x2(a, k, b, base, contractOff, c, ldc)
		axpy64x2(a[2*k:], k, b, base, contractOff, c[2*ldc:], ldc)
	case 1:
		axpy64x1(a, k, b, base, contractOff, c, ldc)
	default:
		return false
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// axpy64x2 is axpy64F32Vec for two rows (8 accumulators; with 4 rows, 16, the compiler spilled).
func axpy64x2(a []float32, k int, b []float32, base int, contractOff []int, c []float32, ldc int) {
	a = a[:2*k]
	var c00, c01, c02, c03, c10, c11, c12, c13 archsimd.Float32x16
	for kk, off := range contractOff {
		x := b[base+off:][:64]
		y0 := archsimd.LoadFloat32x16((*[16]float32)(x[0:16]))
		y1 := archsimd.LoadFloat32x16((*[16]float32)(x[16:32]))
		y2 := archsimd.LoadFloat32x16((*[16]float32)(x[32:48]))
		y3 := archsimd.LoadFloat32x16((*[16]float32)(x[48:64]))
		s0 := archsimd.BroadcastFloat32x16(a[0*k+kk])
		c00, c01, c02, c03 = y0.MulAdd(s0, c00), y1.MulAdd(s0, c01), y2.MulAdd(s0, c02), y3.MulAdd(s0, c03)
		s1 := archsimd.BroadcastFloat32x16(a[1*k+kk])
		c10, c11, c12, c13 = y0.MulAdd(s1, c10), y1.MulAdd(s1, c11), y2.MulAdd(s1, c12), y3.MulAdd(s1, c13)
	}
	c00.Store((*[16]float32)(c[0*ldc+0:][:16]))
	c01.Store((*[16]float32)(c[0*ldc+16:][:16]))
	c02.Store((*[16]float32)(c[0*ldc+32:][:16]))
	c03.Store((*[16]float32)(c[0*ldc+48:][:16]))
	c10.Store((*[16]float32)(c[1*ldc+0:][:16]))
	c11.Store((*[16]float32)(c[1*ldc+16:][:16]))
	c12.Store((*[16]float32)(c[1*ldc+32:][:16]))
	c13.Store((*[16]float32)(c[1*ldc+48:][:16]))
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

func axpy64x1(a []float32, k int, b []float32, base int, contractOff []int, c []float32, ldc int) {
	a = a[:k]
	var c00, c01, c02, c03 archsimd.Float32x16
	for kk, off := range contractOff {
		x := b[base+off:][:64]
		y0 := archsimd.LoadFloat32x16((*[16]float32)(x[0:16]))
		y1 := archsimd.LoadFloat32x16((*[16]float32)(x[16:32]))
		y2 := archsimd.LoadFloat32x16((*[16]float32)(x[32:48]))
		y3 := archsimd.LoadFloat32x16((*[16]float32)(x[48:64]))
		s0 := archsimd.BroadcastFloat32x16(a[0*k+kk])
		c00, c01, c02, c03 = y0.MulAdd(s0, c00), y1.MulAdd(s0, c01), y2.MulAdd(s0, c02), y3.MulAdd(s0, c03)
	}
	c00.Store((*[16]float32)(c[0*ldc+0:][:16]))
	c01.Store((*[16]float32)(c[0*ldc+16:][:16]))
	c02.Store((*[16]float32)(c[0*ldc+32:][:16]))
	c03.Store((*[16]float32)(c[0*ldc+48:][:16]))
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}
