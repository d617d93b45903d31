//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// The SIMD micro-kernels, written with Go 1.26's experimental simd/archsimd (no assembly, no cgo).
// They are built only with GOEXPERIMENT=simd on amd64 and only with Go 1.26: archsimd is not
// covered by the Go 1 promise and its API changes in Go 1.27, so a newer Go falls back to the
// plain-Go kernel (kernel_nosimd.go) instead of failing to build.
//
// Design (BLIS/Goto): a register tile of C of mr rows × nr columns lives in vector accumulators
// for the whole kc loop; each step loads one row of the packed B micro-panel (nr values, two
// vectors), broadcasts the mr values of the packed A column, and does 2·mr fused multiply-adds.
// With AVX-512 (32 registers): 8 rows × 2 vectors = 16 accumulators + 2 B vectors + 1 broadcast.
// With AVX2 (16 registers): 4 rows × 2 vectors = 8 accumulators.

import "simd/archsimd"

// simdKernelF32 returns the best float32 kernel this CPU runs, and false if none.
func simdKernelF32() (microKernel[float32], bool) {
	switch {
	case archsimd.X86.AVX512():
		return microKernel[float32]{name: "avx512-8x32", mr: 8, nr: 32, fn: kernelF32x16x8}, true
	case archsimd.X86.AVX2() && archsimd.X86.FMA():
		return microKernel[float32]{name: "avx2-4x16", mr: 4, nr: 16, fn: kernelF32x8x4}, true
	}
	return microKernel[float32]{}, false
}

// simdKernelF64 returns the best float64 kernel this CPU runs, and false if none.
func simdKernelF64() (microKernel[float64], bool) {
	switch {
	case archsimd.X86.AVX512():
		return microKernel[float64]{name: "avx512-8x16", mr: 8, nr: 16, fn: kernelF64x8x8}, true
	case archsimd.X86.AVX2() && archsimd.X86.FMA():
		return microKernel[float64]{name: "avx2-4x8", mr: 4, nr: 8, fn: kernelF64x4x4}, true
	}
	return microKernel[float64]{}, false
}

// kernelF32x16x8: a: [kc, 8], b: [kc, 32] (2 vectors of 16), c: 8 rows of ≥ 32, ldc apart.
func kernelF32x16x8(kc int, a, b, c []float32, ldc int, accumulate bool) {
	var c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71 archsimd.Float32x16
	a, b = a[:8*kc], b[:32*kc]
	for len(a) >= 8 && len(b) >= 32 {
		b0 := archsimd.LoadFloat32x16((*[16]float32)(b[0:16]))
		b1 := archsimd.LoadFloat32x16((*[16]float32)(b[16:32]))
		a0 := archsimd.BroadcastFloat32x16(a[0])
		c00 = a0.MulAdd(b0, c00)
		c01 = a0.MulAdd(b1, c01)
		a1 := archsimd.BroadcastFloat32x16(a[1])
		c10 = a1.MulAdd(b0, c10)
		c11 = a1.MulAdd(b1, c11)
		a2 := archsimd.BroadcastFloat32x16(a[2])
		c20 = a2.MulAdd(b0, c20)
		c21 = a2.MulAdd(b1, c21)
		a3 := archsimd.BroadcastFloat32x16(a[3])
		c30 = a3.MulAdd(b0, c30)
		c31 = a3.MulAdd(b1, c31)
		a4 := archsimd.BroadcastFloat32x16(a[4])
		c40 = a4.MulAdd(b0, c40)
		c41 = a4.MulAdd(b1, c41)
		a5 := archsimd.BroadcastFloat32x16(a[5])
		c50 = a5.MulAdd(b0, c50)
		c51 = a5.MulAdd(b1, c51)
		a6 := archsimd.BroadcastFloat32x16(a[6])
		c60 = a6.MulAdd(b0, c60)
		c61 = a6.MulAdd(b1, c61)
		a7 := archsimd.BroadcastFloat32x16(a[7])
		c70 = a7.MulAdd(b0, c70)
		c71 = a7.MulAdd(b1, c71)
		a, b = a[8:], b[32:]
	}
	storeFloat32x16(c[0*ldc:], c00, c01, accumulate)
	storeFloat32x16(c[1*ldc:], c10, c11, accumulate)
	storeFloat32x16(c[2*ldc:], c20, c21, accumulate)
	storeFloat32x16(c[3*ldc:], c30, c31, accumulate)
	storeFloat32x16(c[4*ldc:], c40, c41, accumulate)
	storeFloat32x16(c[5*ldc:], c50, c51, accumulate)
	storeFloat32x16(c[6*ldc:], c60, c61, accumulate)
	storeFloat32x16(c[7*ldc:], c70, c71, accumulate)
}

// storeFloat32x16 writes (or adds) two vectors to row[0:32].
func storeFloat32x16(row []float32, v0, v1 archsimd.Float32x16, accumulate bool) {
	p0, p1 := (*[16]float32)(row[0:16]), (*[16]float32)(row[16:32])
	if accumulate {
		v0 = v0.Add(archsimd.LoadFloat32x16(p0))
		v1 = v1.Add(archsimd.LoadFloat32x16(p1))
	}
	v0.Store(p0)
	v1.Store(p1)
}

// kernelF32x8x4: a: [kc, 4], b: [kc, 16] (2 vectors of 8), c: 4 rows of ≥ 16, ldc apart.
func kernelF32x8x4(kc int, a, b, c []float32, ldc int, accumulate bool) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	a, b = a[:4*kc], b[:16*kc]
	for len(a) >= 4 && len(b) >= 16 {
		b0 := archsimd.LoadFloat32x8((*[8]float32)(b[0:8]))
		b1 := archsimd.LoadFloat32x8((*[8]float32)(b[8:16]))
		a0 := archsimd.BroadcastFloat32x8(a[0])
		c00 = a0.MulAdd(b0, c00)
		c01 = a0.MulAdd(b1, c01)
		a1 := archsimd.BroadcastFloat32x8(a[1])
		c10 = a1.MulAdd(b0, c10)
		c11 = a1.MulAdd(b1, c11)
		a2 := archsimd.BroadcastFloat32x8(a[2])
		c20 = a2.MulAdd(b0, c20)
		c21 = a2.MulAdd(b1, c21)
		a3 := archsimd.BroadcastFloat32x8(a[3])
		c30 = a3.MulAdd(b0, c30)
		c31 = a3.MulAdd(b1, c31)
		a, b = a[4:], b[16:]
	}
	storeFloat32x8(c[0*ldc:], c00, c01, accumulate)
	storeFloat32x8(c[1*ldc:], c10, c11, accumulate)
	storeFloat32x8(c[2*ldc:], c20, c21, accumulate)
	storeFloat32x8(c[3*ldc:], c30, c31, accumulate)
}

// storeFloat32x8 writes (or adds) two vectors to row[0:16].
func storeFloat32x8(row []float32, v0, v1 archsimd.Float32x8, accumulate bool) {
	p0, p1 := (*[8]float32)(row[0:8]), (*[8]float32)(row[8:16])
	if accumulate {
		v0 = v0.Add(archsimd.LoadFloat32x8(p0))
		v1 = v1.Add(archsimd.LoadFloat32x8(p1))
	}
	v0.Store(p0)
	v1.Store(p1)
}

// kernelF64x8x8: a: [kc, 8], b: [kc, 16] (2 vectors of 8), c: 8 rows of ≥ 16, ldc apart.
func kernelF64x8x8(kc int, a, b, c []float64, ldc int, accumulate bool) {
	var c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71 archsimd.Float64x8
	a, b = a[:8*kc], b[:16*kc]
	for len(a) >= 8 && len(b) >= 16 {
		b0 := archsimd.LoadFloat64x8((*[8]float64)(b[0:8]))
		b1 := archsimd.LoadFloat64x8((*[8]float64)(b[8:16]))
		a0 := archsimd.BroadcastFloat64x8(a[0])
		c00 = a0.MulAdd(b0, c00)
		c01 = a0.MulAdd(b1, c01)
		a1 := archsimd.BroadcastFloat64x8(a[1])
		c10 = a1.MulAdd(b0, c10)
		c11 = a1.MulAdd(b1, c11)
		a2 := archsimd.BroadcastFloat64x8(a[2])
		c20 = a2.MulAdd(b0, c20)
		c21 = a2.MulAdd(b1, c21)
		a3 := archsimd.BroadcastFloat64x8(a[3])
		c30 = a3.MulAdd(b0, c30)
		c31 = a3.MulAdd(b1, c31)
		a4 := archsimd.BroadcastFloat64x8(a[4])
		c40 = a4.MulAdd(b0, c40)
		c41 = a4.MulAdd(b1, c41)
		a5 := archsimd.BroadcastFloat64x8(a[5])
		c50 = a5.MulAdd(b0, c50)
		c51 = a5.MulAdd(b1, c51)
		a6 := archsimd.BroadcastFloat64x8(a[6])
		c60 = a6.MulAdd(b0, c60)
		c61 = a6.MulAdd(b1, c61)
		a7 := archsimd.BroadcastFloat64x8(a[7])
		c70 = a7.MulAdd(b0, c70)
		c71 = a7.MulAdd(b1, c71)
		a, b = a[8:], b[16:]
	}
	storeFloat64x8(c[0*ldc:], c00, c01, accumulate)
	storeFloat64x8(c[1*ldc:], c10, c11, accumulate)
	storeFloat64x8(c[2*ldc:], c20, c21, accumulate)
	storeFloat64x8(c[3*ldc:], c30, c31, accumulate)
	storeFloat64x8(c[4*ldc:], c40, c41, accumulate)
	storeFloat64x8(c[5*ldc:], c50, c51, accumulate)
	storeFloat64x8(c[6*ldc:], c60, c61, accumulate)
	storeFloat64x8(c[7*ldc:], c70, c71, accumulate)
}

// storeFloat64x8 writes (or adds) two vectors to row[0:16].
func storeFloat64x8(row []float64, v0, v1 archsimd.Float64x8, accumulate bool) {
	p0, p1 := (*[8]float64)(row[0:8]), (*[8]float64)(row[8:16])
	if accumulate {
		v0 = v0.Add(archsimd.LoadFloat64x8(p0))
		v1 = v1.Add(archsimd.LoadFloat64x8(p1))
	}
	v0.Store(p0)
	v1.Store(p1)
}

// kernelF64x4x4: a: [kc, 4], b: [kc, 8] (2 vectors of 4), c: 4 rows of ≥ 8, ldc apart.
func kernelF64x4x4(kc int, a, b, c []float64, ldc int, accumulate bool) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float64x4
	a, b = a[:4*kc], b[:8*kc]
	for len(a) >= 4 && len(b) >= 8 {
		b0 := archsimd.LoadFloat64x4((*[4]float64)(b[0:4]))
		b1 := archsimd.LoadFloat64x4((*[4]float64)(b[4:8]))
		a0 := archsimd.BroadcastFloat64x4(a[0])
		c00 = a0.MulAdd(b0, c00)
		c01 = a0.MulAdd(b1, c01)
		a1 := archsimd.BroadcastFloat64x4(a[1])
		c10 = a1.MulAdd(b0, c10)
		c11 = a1.MulAdd(b1, c11)
		a2 := archsimd.BroadcastFloat64x4(a[2])
		c20 = a2.MulAdd(b0, c20)
		c21 = a2.MulAdd(b1, c21)
		a3 := archsimd.BroadcastFloat64x4(a[3])
		c30 = a3.MulAdd(b0, c30)
		c31 = a3.MulAdd(b1, c31)
		a, b = a[4:], b[8:]
	}
	storeFloat64x4(c[0*ldc:], c00, c01, accumulate)
	storeFloat64x4(c[1*ldc:], c10, c11, accumulate)
	storeFloat64x4(c[2*ldc:], c20, c21, accumulate)
	storeFloat64x4(c[3*ldc:], c30, c31, accumulate)
}

// storeFloat64x4 writes (or adds) two vectors to row[0:8].
func storeFloat64x4(row []float64, v0, v1 archsimd.Float64x4, accumulate bool) {
	p0, p1 := (*[4]float64)(row[0:4]), (*[4]float64)(row[4:8])
	if accumulate {
		v0 = v0.Add(archsimd.LoadFloat64x4(p0))
		v1 = v1.Add(archsimd.LoadFloat64x4(p1))
	}
	v0.Store(p0)
	v1.Store(p1)
}
