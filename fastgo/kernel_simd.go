//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// The float64 micro-kernels, written with Go 1.26's experimental simd/archsimd (no cgo; the
// float32 kernels the GEMM runs are in assembly: kernel_f32.go).
// They are built only with GOEXPERIMENT=simd on amd64 and only with Go 1.26: archsimd is not
// covered by the Go 1 promise and its API changes in Go 1.27, so another Go falls back to the
// plain-Go kernel (kernel_nosimd.go) instead of failing to build.
//
// Design (BLIS/Goto): a register tile of C, 4 rows × 2 vectors, lives in 8 vector accumulators
// for the whole kc loop; each step loads one row of the packed B micro-panel (2 vectors),
// broadcasts the 4 values of the packed A column, and does 8 fused multiply-adds. Go 1.26's
// register allocator keeps vectors in X0–X15 only; with 10 or more accumulators the kernels
// spilled to the stack and ran ~10× slower, so the tile is 4×2 vectors even with AVX-512's 32
// registers. (kernel_avx2.go found much of that to be the scheduler, not the allocator: with
// the loop test at the bottom, 10 Float32x8 accumulators stay in registers.) The archsimd
// float32 kernels of the same design, 4×32 on AVX-512, are gone: the assembly kernels, which
// broadcast from memory and hold 16 accumulators, ran 1.3–1.6× faster (kernel_avx512.go).

import (
	"simd/archsimd"
	"unsafe"
)

// simdKernelF64 returns the best float64 kernel this CPU runs, and false if none.
func simdKernelF64() (microKernel[float64], bool) {
	switch {
	case archsimd.X86.AVX512():
		return microKernel[float64]{name: "avx512-4x16", mr: 4, nr: 16, fn: kernelF64x8}, true
	case archsimd.X86.AVX2() && archsimd.X86.FMA():
		return microKernel[float64]{name: "avx2-4x8", mr: 4, nr: 8, fn: kernelF64x4}, true
	}
	return microKernel[float64]{}, false
}

// ldF32x8 loads the 8 float32 at p + off bytes. The callers checked the bounds.
func ldF32x8(p unsafe.Pointer, off uintptr) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, off)))
}

// kernelF64x8: a: [kc, 4], b: [kc, 16] (2 vectors of 8), c: 4 rows of ≥ 16, ldc apart.
func kernelF64x8(kc int, a, b, c []float64, ldc int, accumulate bool) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float64x8
	a, b = a[:4*kc], b[:16*kc]
	for len(a) >= 4 && len(b) >= 16 {
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
		a, b = a[4:], b[16:]
	}
	storeFloat64x8(c[0*ldc+0:], c00, accumulate)
	storeFloat64x8(c[0*ldc+8:], c01, accumulate)
	storeFloat64x8(c[1*ldc+0:], c10, accumulate)
	storeFloat64x8(c[1*ldc+8:], c11, accumulate)
	storeFloat64x8(c[2*ldc+0:], c20, accumulate)
	storeFloat64x8(c[2*ldc+8:], c21, accumulate)
	storeFloat64x8(c[3*ldc+0:], c30, accumulate)
	storeFloat64x8(c[3*ldc+8:], c31, accumulate)
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// storeFloat64x8 writes (or adds) one vector to dst[0:8].
func storeFloat64x8(dst []float64, v archsimd.Float64x8, accumulate bool) {
	p := (*[8]float64)(dst[:8])
	if accumulate {
		v = v.Add(archsimd.LoadFloat64x8(p))
	}
	v.Store(p)
}

// kernelF64x4: a: [kc, 4], b: [kc, 8] (2 vectors of 4), c: 4 rows of ≥ 8, ldc apart.
func kernelF64x4(kc int, a, b, c []float64, ldc int, accumulate bool) {
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
	storeFloat64x4(c[0*ldc+0:], c00, accumulate)
	storeFloat64x4(c[0*ldc+4:], c01, accumulate)
	storeFloat64x4(c[1*ldc+0:], c10, accumulate)
	storeFloat64x4(c[1*ldc+4:], c11, accumulate)
	storeFloat64x4(c[2*ldc+0:], c20, accumulate)
	storeFloat64x4(c[2*ldc+4:], c21, accumulate)
	storeFloat64x4(c[3*ldc+0:], c30, accumulate)
	storeFloat64x4(c[3*ldc+4:], c31, accumulate)
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// storeFloat64x4 writes (or adds) one vector to dst[0:4].
func storeFloat64x4(dst []float64, v archsimd.Float64x4, accumulate bool) {
	p := (*[4]float64)(dst[:4])
	if accumulate {
		v = v.Add(archsimd.LoadFloat64x4(p))
	}
	v.Store(p)
}
