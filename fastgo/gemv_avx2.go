//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// AVX2 loops of gemv (gemv.go): the kernels of gemv_simd.go in 256-bit vectors (Float32x8,
// AVX2 with FMA), which gemv_simd.go's kernels call where AVX-512 is absent (vecAVX2; most
// laptops, and AMD EPYCs before Zen 4). Each has the contract of its AVX-512 twin; they report
// false without AVX2+FMA and gemv uses plain Go.
//
// Each kernel ends with VZEROUPPER (archsimd.ClearAVXUpperBits; Go 1.26 does not emit it): with
// the upper halves of the ymm registers left dirty, the SSE code that follows ran many times
// slower on this AMD EPYC (math.Exp over 4096 values after dotRowsF32AVX2: 8.0 ms against
// 0.17, BenchmarkKVDecode's exp from 5 to 50 ms per token).
//
// Go 1.26's register allocator keeps 16 vector registers and spills with 10 or more live
// accumulators (kernel_simd.go), and AVX2 has 16 ymm registers: the register tiles stay at 8
// accumulators of 8 lanes, which holds half the columns of the AVX-512 tiles (axpy64AVX2 cuts
// 64 columns into two halves of 32 where the AVX-512 kernel holds 2 rows × 64).

import (
	"simd/archsimd"
	"unsafe"
)

// axpyF32AVX2 is axpyF32Vec in 256-bit vectors: dst[i] += s·x[i] with one fused multiply-add
// per element (the same roundings as the AVX-512 loop), true; false (nothing done) without
// AVX2+FMA. len(x) ≥ len(dst).
func axpyF32AVX2(dst []float32, s float32, x []float32) bool {
	if !vecAVX2 {
		return false
	}
	sv := archsimd.BroadcastFloat32x8(s)
	n := len(dst)
	x = x[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		d0 := archsimd.LoadFloat32x8((*[8]float32)(dst[i : i+8]))
		d1 := archsimd.LoadFloat32x8((*[8]float32)(dst[i+8 : i+16]))
		d2 := archsimd.LoadFloat32x8((*[8]float32)(dst[i+16 : i+24]))
		d3 := archsimd.LoadFloat32x8((*[8]float32)(dst[i+24 : i+32]))
		archsimd.LoadFloat32x8((*[8]float32)(x[i:i+8])).MulAdd(sv, d0).Store((*[8]float32)(dst[i : i+8]))
		archsimd.LoadFloat32x8((*[8]float32)(x[i+8:i+16])).MulAdd(sv, d1).Store((*[8]float32)(dst[i+8 : i+16]))
		archsimd.LoadFloat32x8((*[8]float32)(x[i+16:i+24])).MulAdd(sv, d2).Store((*[8]float32)(dst[i+16 : i+24]))
		archsimd.LoadFloat32x8((*[8]float32)(x[i+24:i+32])).MulAdd(sv, d3).Store((*[8]float32)(dst[i+24 : i+32]))
	}
	for ; i+8 <= n; i += 8 {
		d := archsimd.LoadFloat32x8((*[8]float32)(dst[i : i+8]))
		archsimd.LoadFloat32x8((*[8]float32)(x[i:i+8])).MulAdd(sv, d).Store((*[8]float32)(dst[i : i+8]))
	}
	if i < n {
		d := loadPartF32x8(dst[i:n])
		storePartF32x8(loadPartF32x8(x[i:n]).MulAdd(sv, d), dst[i:n])
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// dotF32AVX2 is dotF32Vec in 256-bit vectors: Σ a[i]·b[i] (fused multiply-adds in four vector
// accumulators) and true, or false without AVX2+FMA. len(b) ≥ len(a).
func dotF32AVX2(a, b []float32) (float32, bool) {
	if !vecAVX2 {
		return 0, false
	}
	n := len(a)
	b = b[:n]
	var acc0, acc1, acc2, acc3 archsimd.Float32x8
	i := 0
	for ; i+32 <= n; i += 32 {
		acc0 = archsimd.LoadFloat32x8((*[8]float32)(a[i:i+8])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b[i:i+8])), acc0)
		acc1 = archsimd.LoadFloat32x8((*[8]float32)(a[i+8:i+16])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b[i+8:i+16])), acc1)
		acc2 = archsimd.LoadFloat32x8((*[8]float32)(a[i+16:i+24])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b[i+16:i+24])), acc2)
		acc3 = archsimd.LoadFloat32x8((*[8]float32)(a[i+24:i+32])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b[i+24:i+32])), acc3)
	}
	for ; i+8 <= n; i += 8 {
		acc0 = archsimd.LoadFloat32x8((*[8]float32)(a[i:i+8])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b[i:i+8])), acc0)
	}
	if i < n {
		acc1 = loadPartF32x8(a[i:n]).MulAdd(loadPartF32x8(b[i:n]), acc1)
	}
	acc := acc0.Add(acc1).Add(acc2.Add(acc3))
	x4 := acc.GetLo().Add(acc.GetHi()) // 8 → 4 lanes, then pairwise
	x4 = x4.AddPairs(x4)
	var lanes [4]float32
	x4.Store(&lanes)
	archsimd.ClearAVXUpperBits()
	return lanes[0] + lanes[1], true
}

// dot4F32AVX2 is dot4F32Vec in 256-bit vectors: out[r] = Σ a_r[i]·b[i] for the four rows a0 …
// a3 (each len(a0) long) against one b, true; false (nothing written) without AVX2+FMA.
// len(b) ≥ len(a0).
func dot4F32AVX2(a0, a1, a2, a3, b []float32, out *[4]float32) bool {
	if !vecAVX2 {
		return false
	}
	n := len(a0)
	a1, a2, a3, b = a1[:n], a2[:n], a3[:n], b[:n]
	var s0, s1, s2, s3 archsimd.Float32x8
	i := 0
	for ; i+8 <= n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(b[i : i+8]))
		s0 = archsimd.LoadFloat32x8((*[8]float32)(a0[i:i+8])).MulAdd(x, s0)
		s1 = archsimd.LoadFloat32x8((*[8]float32)(a1[i:i+8])).MulAdd(x, s1)
		s2 = archsimd.LoadFloat32x8((*[8]float32)(a2[i:i+8])).MulAdd(x, s2)
		s3 = archsimd.LoadFloat32x8((*[8]float32)(a3[i:i+8])).MulAdd(x, s3)
	}
	if i < n {
		x := loadPartF32x8(b[i:n])
		s0 = loadPartF32x8(a0[i:n]).MulAdd(x, s0)
		s1 = loadPartF32x8(a1[i:n]).MulAdd(x, s1)
		s2 = loadPartF32x8(a2[i:n]).MulAdd(x, s2)
		s3 = loadPartF32x8(a3[i:n]).MulAdd(x, s3)
	}
	sum4x8(s0, s1, s2, s3).Store(out)
	archsimd.ClearAVXUpperBits()
	return true
}

// sum4x8 returns [Σs0, Σs1, Σs2, Σs3], the lanes of each vector summed: pairwise within each
// 128-bit half (three VHADDPS for the four vectors), then the two halves.
func sum4x8(s0, s1, s2, s3 archsimd.Float32x8) archsimd.Float32x4 {
	u := s0.AddPairsGrouped(s1).AddPairsGrouped(s2.AddPairsGrouped(s3))
	return u.GetLo().Add(u.GetHi())
}

// dot4x4F32AVX2 is dot4x4F32Vec in 256-bit vectors: out[4r+s] = Σ a[r][i]·b[s][i] for four rows
// of A and four of B (each len(a[0]) long), true; false (nothing written) without AVX2+FMA.
// Two blocks of 2 rows × 4 (8 accumulators), as the AVX-512 kernel.
func dot4x4F32AVX2(a, b *[4][]float32, out *[16]float32) bool {
	if !vecAVX2 {
		return false
	}
	dot2x4AVX2(a[0], a[1], b, (*[8]float32)(out[0:8]))
	dot2x4AVX2(a[2], a[3], b, (*[8]float32)(out[8:16]))
	archsimd.ClearAVXUpperBits()
	return true
}

// dot2x4AVX2 sets out[4r+s] = Σ a_r[i]·b[s][i] for r < 2, s < 4 (AVX2).
func dot2x4AVX2(a0, a1 []float32, b *[4][]float32, out *[8]float32) {
	n := len(a0)
	a1 = a1[:n]
	b0, b1, b2, b3 := b[0][:n], b[1][:n], b[2][:n], b[3][:n]
	var s00, s01, s02, s03, s10, s11, s12, s13 archsimd.Float32x8
	i := 0
	for ; i+8 <= n; i += 8 {
		x0 := archsimd.LoadFloat32x8((*[8]float32)(a0[i : i+8]))
		x1 := archsimd.LoadFloat32x8((*[8]float32)(a1[i : i+8]))
		y0 := archsimd.LoadFloat32x8((*[8]float32)(b0[i : i+8]))
		y1 := archsimd.LoadFloat32x8((*[8]float32)(b1[i : i+8]))
		y2 := archsimd.LoadFloat32x8((*[8]float32)(b2[i : i+8]))
		y3 := archsimd.LoadFloat32x8((*[8]float32)(b3[i : i+8]))
		s00, s01, s02, s03 = x0.MulAdd(y0, s00), x0.MulAdd(y1, s01), x0.MulAdd(y2, s02), x0.MulAdd(y3, s03)
		s10, s11, s12, s13 = x1.MulAdd(y0, s10), x1.MulAdd(y1, s11), x1.MulAdd(y2, s12), x1.MulAdd(y3, s13)
	}
	if i < n {
		x0 := loadPartF32x8(a0[i:n])
		x1 := loadPartF32x8(a1[i:n])
		y0 := loadPartF32x8(b0[i:n])
		y1 := loadPartF32x8(b1[i:n])
		y2 := loadPartF32x8(b2[i:n])
		y3 := loadPartF32x8(b3[i:n])
		s00, s01, s02, s03 = x0.MulAdd(y0, s00), x0.MulAdd(y1, s01), x0.MulAdd(y2, s02), x0.MulAdd(y3, s03)
		s10, s11, s12, s13 = x1.MulAdd(y0, s10), x1.MulAdd(y1, s11), x1.MulAdd(y2, s12), x1.MulAdd(y3, s13)
	}
	sum4x8(s00, s01, s02, s03).Store((*[4]float32)(out[0:4]))
	sum4x8(s10, s11, s12, s13).Store((*[4]float32)(out[4:8]))
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// axpy64F32AVX2 is axpy64F32Vec in 256-bit vectors: c[r·ldc + j] = Σ_kk a[r·k + kk]·b[base +
// contractOff[kk] + j] for r < rows (1 or 4) and j < 64, each output one chain of fused
// multiply-adds in kk order (the AVX-512 kernel's roundings), true; false (nothing written)
// without AVX2+FMA or for another number of rows. Four rows go as two pairs, each pair over
// the two halves of 32 columns (8 accumulators: 2 rows × 64 columns would be 16).
func axpy64F32AVX2(a []float32, rows, k int, b []float32, base int, contractOff []int, c []float32, ldc int) bool {
	if !vecAVX2 || len(contractOff) != k {
		return false
	}
	switch rows {
	case 4:
		for r := 0; r < 4; r += 2 {
			axpy32x2AVX2(a[r*k:], k, b, base, contractOff, c[r*ldc:], ldc)
			axpy32x2AVX2(a[r*k:], k, b, base+32, contractOff, c[r*ldc+32:], ldc)
		}
	case 1:
		if ld := uniformStride(contractOff); ld >= 64 && axpyWalk {
			axpy64x1StridedAVX2(a[:k], b[base+contractOff[0]:], ld, c)
		} else {
			axpy64x1AVX2(a, k, b, base, contractOff, c)
		}
	default:
		return false
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// axpy32x2AVX2 is axpy64F32AVX2 for two rows and 32 columns (8 accumulators).
func axpy32x2AVX2(a []float32, k int, b []float32, base int, contractOff []int, c []float32, ldc int) {
	a0, a1 := a[:k], a[k:2*k]
	var c00, c01, c02, c03, c10, c11, c12, c13 archsimd.Float32x8
	for kk, off := range contractOff {
		x := b[base+off:][:32]
		y0 := archsimd.LoadFloat32x8((*[8]float32)(x[0:8]))
		y1 := archsimd.LoadFloat32x8((*[8]float32)(x[8:16]))
		y2 := archsimd.LoadFloat32x8((*[8]float32)(x[16:24]))
		y3 := archsimd.LoadFloat32x8((*[8]float32)(x[24:32]))
		s0 := archsimd.BroadcastFloat32x8(a0[kk])
		c00, c01, c02, c03 = y0.MulAdd(s0, c00), y1.MulAdd(s0, c01), y2.MulAdd(s0, c02), y3.MulAdd(s0, c03)
		s1 := archsimd.BroadcastFloat32x8(a1[kk])
		c10, c11, c12, c13 = y0.MulAdd(s1, c10), y1.MulAdd(s1, c11), y2.MulAdd(s1, c12), y3.MulAdd(s1, c13)
	}
	c0, c1 := c[:32], c[ldc:][:32]
	c00.Store((*[8]float32)(c0[0:8]))
	c01.Store((*[8]float32)(c0[8:16]))
	c02.Store((*[8]float32)(c0[16:24]))
	c03.Store((*[8]float32)(c0[24:32]))
	c10.Store((*[8]float32)(c1[0:8]))
	c11.Store((*[8]float32)(c1[8:16]))
	c12.Store((*[8]float32)(c1[16:24]))
	c13.Store((*[8]float32)(c1[24:32]))
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// axpy64x1AVX2 is axpy64F32AVX2 for one row (8 accumulators of the 64 columns).
func axpy64x1AVX2(a []float32, k int, b []float32, base int, contractOff []int, c []float32) {
	a = a[:k]
	var c0, c1, c2, c3, c4, c5, c6, c7 archsimd.Float32x8
	for kk, off := range contractOff {
		x := b[base+off:][:64]
		s := archsimd.BroadcastFloat32x8(a[kk])
		c0 = archsimd.LoadFloat32x8((*[8]float32)(x[0:8])).MulAdd(s, c0)
		c1 = archsimd.LoadFloat32x8((*[8]float32)(x[8:16])).MulAdd(s, c1)
		c2 = archsimd.LoadFloat32x8((*[8]float32)(x[16:24])).MulAdd(s, c2)
		c3 = archsimd.LoadFloat32x8((*[8]float32)(x[24:32])).MulAdd(s, c3)
		c4 = archsimd.LoadFloat32x8((*[8]float32)(x[32:40])).MulAdd(s, c4)
		c5 = archsimd.LoadFloat32x8((*[8]float32)(x[40:48])).MulAdd(s, c5)
		c6 = archsimd.LoadFloat32x8((*[8]float32)(x[48:56])).MulAdd(s, c6)
		c7 = archsimd.LoadFloat32x8((*[8]float32)(x[56:64])).MulAdd(s, c7)
	}
	c = c[:64]
	c0.Store((*[8]float32)(c[0:8]))
	c1.Store((*[8]float32)(c[8:16]))
	c2.Store((*[8]float32)(c[16:24]))
	c3.Store((*[8]float32)(c[24:32]))
	c4.Store((*[8]float32)(c[32:40]))
	c5.Store((*[8]float32)(c[40:48]))
	c6.Store((*[8]float32)(c[48:56]))
	c7.Store((*[8]float32)(c[56:64]))
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// axpy64x1StridedAVX2 is axpy64x1AVX2 for B rows ld apart (ld ≥ 64; a decoding step's value
// rows): c[j] = Σ_kk a[kk]·b[kk·ld + j], j < 64, the same fused multiply-adds in the same
// order, the rows read through an unsafe pointer after one bounds check (as dotRows64AVX2)
// instead of through the offset table with a bounds check each. BenchmarkGEMVDecode/Hkv=32/
// weighted (w [32, 1, 256] · V [32, 256, 64], chunks from memory), alternated in one run,
// load ~3: 113.9 → 109.1 and 131.6 → 125.5 µs (0.96×, CPU time alike).
func axpy64x1StridedAVX2(a, b []float32, ld int, c []float32) {
	k := len(a)
	_ = b[(k-1)*ld+63]
	var c0, c1, c2, c3, c4, c5, c6, c7 archsimd.Float32x8
	pb, pa := unsafe.Pointer(unsafe.SliceData(b)), unsafe.Pointer(unsafe.SliceData(a))
	stride := uintptr(ld) * 4
	for i := range k {
		s := archsimd.BroadcastFloat32x8(*(*float32)(pa))
		c0 = ldF32x8(pb, 0).MulAdd(s, c0)
		c1 = ldF32x8(pb, 32).MulAdd(s, c1)
		c2 = ldF32x8(pb, 64).MulAdd(s, c2)
		c3 = ldF32x8(pb, 96).MulAdd(s, c3)
		c4 = ldF32x8(pb, 128).MulAdd(s, c4)
		c5 = ldF32x8(pb, 160).MulAdd(s, c5)
		c6 = ldF32x8(pb, 192).MulAdd(s, c6)
		c7 = ldF32x8(pb, 224).MulAdd(s, c7)
		if i+1 < k { // never past the ends: the GC (and -race's checkptr) rejects such a pointer
			pb, pa = unsafe.Add(pb, stride), unsafe.Add(pa, 4)
		}
	}
	c = c[:64]
	c0.Store((*[8]float32)(c[0:8]))
	c1.Store((*[8]float32)(c[8:16]))
	c2.Store((*[8]float32)(c[16:24]))
	c3.Store((*[8]float32)(c[24:32]))
	c4.Store((*[8]float32)(c[32:40]))
	c5.Store((*[8]float32)(c[40:48]))
	c6.Store((*[8]float32)(c[48:56]))
	c7.Store((*[8]float32)(c[56:64]))
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}
