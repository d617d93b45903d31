//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// The SIMD micro-kernels, written with Go 1.26's experimental simd/archsimd (no cgo; the AVX2
// float32 kernel the GEMM runs is in assembly: kernel_avx2.go).
// They are built only with GOEXPERIMENT=simd on amd64 and only with Go 1.26: archsimd is not
// covered by the Go 1 promise and its API changes in Go 1.27, so another Go falls back to the
// plain-Go kernel (kernel_nosimd.go) instead of failing to build.
//
// Design (BLIS/Goto): a register tile of C, 4 rows × 2 vectors, lives in 8 vector accumulators
// for the whole kc loop; each step loads one row of the packed B micro-panel (2 vectors),
// broadcasts the 4 values of the packed A column, and does 8 fused multiply-adds. Go 1.26's
// register allocator keeps 8 accumulators in registers; with 10 or more it spills to the stack
// and the kernel runs ~10× slower (BenchmarkMicroKernel), so the tile is 4×2 vectors even with
// AVX-512's 32 registers: 4×32 float32 (AVX-512), 4×16 (AVX2). (kernel_avx2.go found much of
// that to be the scheduler, not the allocator: with the loop test at the bottom, 10 Float32x8
// accumulators stay in registers; and the inlined helpers here cost a NOP each in the loop.)
//
// For float32 the GEMM runs the assembly kernels (kernel_avx2.go, kernel_avx512.go: archsimd has
// no broadcast from memory, and Go's allocator no more than 16 vector registers); the archsimd
// 4×32 float32 kernel is what they are measured against (BenchmarkMicroKernelAVX512AB).

import (
	"simd/archsimd"
	"unsafe"
)

// simdKernelF32 returns the best float32 kernel this CPU runs, and false if none.
func simdKernelF32() (microKernel[float32], bool) {
	if archsimd.X86.AVX512() {
		if asm, ok := asmKernelF32AVX512(); ok { // kernel_avx512.go: broadcasts from memory, 16 accumulators
			return asm, true
		}
		return microKernel[float32]{name: "avx512-4x32", mr: 4, nr: 32, fn: kernelF32x16, rows: kernelF32x16Rows, rowsHalf: kernelF32x16RowsHalf}, true
	}
	return asmKernelF32() // kernel_avx2.go; tests call it directly to run it on AVX-512 machines too
}

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

// kernelF32x16: a: [kc, 4], b: [kc, 32] (2 vectors of 16), c: 4 rows of ≥ 32, ldc apart.
func kernelF32x16(kc int, a, b, c []float32, ldc int, accumulate bool) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
	a, b = a[:4*kc], b[:32*kc]
	for len(a) >= 4 && len(b) >= 32 {
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
		a, b = a[4:], b[32:]
	}
	storeFloat32x16(c[0*ldc+0:], c00, accumulate)
	storeFloat32x16(c[0*ldc+16:], c01, accumulate)
	storeFloat32x16(c[1*ldc+0:], c10, accumulate)
	storeFloat32x16(c[1*ldc+16:], c11, accumulate)
	storeFloat32x16(c[2*ldc+0:], c20, accumulate)
	storeFloat32x16(c[2*ldc+16:], c21, accumulate)
	storeFloat32x16(c[3*ldc+0:], c30, accumulate)
	storeFloat32x16(c[3*ldc+16:], c31, accumulate)
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// kernelF32x16Rows is kernelF32x16 with A read from its four rows: a0…a3: [kc] each. The loop
// is unrolled 4 times and walks A and B with unsafe pointers after one bounds check per operand:
// Go 1.26 places each FMA's result in a new register and moves the eight accumulators back at
// the end of every iteration (unrolled, those moves happen less often), and with slices it
// recomputed and spilled addresses and lengths inside the loop. BenchmarkMicroKernel/…/rows,
// per-thread CPU time: the pointer walk 167–194 GFLOP/cpu-s (median 184) against 136–168
// (median 156) for the slice loop (6 interleaved runs each, load ~18); the FMA peak of one core
// here is ~218 (8 independent chains of register FMAs).
func kernelF32x16Rows(kc int, a0, a1, a2, a3, b, c []float32, ldc int, accumulate bool) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
	if kc > 0 {
		_, _, _, _ = a0[kc-1], a1[kc-1], a2[kc-1], a3[kc-1] // A: 4 rows of kc
		_ = b[32*kc-1]                                      // B: [kc, 32]
		p0, p1, p2, p3 := unsafe.Pointer(&a0[0]), unsafe.Pointer(&a1[0]), unsafe.Pointer(&a2[0]), unsafe.Pointer(&a3[0])
		pb := unsafe.Pointer(&b[0])
		k := 0
		for ; k+4 <= kc; k += 4 {
			c00, c01, c10, c11, c20, c21, c30, c31 = rowsStep(pb, 0, p0, p1, p2, p3, 0, c00, c01, c10, c11, c20, c21, c30, c31)
			c00, c01, c10, c11, c20, c21, c30, c31 = rowsStep(pb, 128, p0, p1, p2, p3, 4, c00, c01, c10, c11, c20, c21, c30, c31)
			c00, c01, c10, c11, c20, c21, c30, c31 = rowsStep(pb, 256, p0, p1, p2, p3, 8, c00, c01, c10, c11, c20, c21, c30, c31)
			c00, c01, c10, c11, c20, c21, c30, c31 = rowsStep(pb, 384, p0, p1, p2, p3, 12, c00, c01, c10, c11, c20, c21, c30, c31)
			if k+4 < kc { // never past the ends: the GC (and -race's checkptr) rejects such a pointer
				p0, p1, p2, p3 = unsafe.Add(p0, 16), unsafe.Add(p1, 16), unsafe.Add(p2, 16), unsafe.Add(p3, 16)
				pb = unsafe.Add(pb, 4*128)
			}
		}
		for ; k < kc; k++ {
			c00, c01, c10, c11, c20, c21, c30, c31 = rowsStep(pb, 0, p0, p1, p2, p3, 0, c00, c01, c10, c11, c20, c21, c30, c31)
			if k+1 < kc {
				p0, p1, p2, p3 = unsafe.Add(p0, 4), unsafe.Add(p1, 4), unsafe.Add(p2, 4), unsafe.Add(p3, 4)
				pb = unsafe.Add(pb, 128)
			}
		}
	}
	storeFloat32x16(c[0*ldc+0:], c00, accumulate)
	storeFloat32x16(c[0*ldc+16:], c01, accumulate)
	storeFloat32x16(c[1*ldc+0:], c10, accumulate)
	storeFloat32x16(c[1*ldc+16:], c11, accumulate)
	storeFloat32x16(c[2*ldc+0:], c20, accumulate)
	storeFloat32x16(c[2*ldc+16:], c21, accumulate)
	storeFloat32x16(c[3*ldc+0:], c30, accumulate)
	storeFloat32x16(c[3*ldc+16:], c31, accumulate)
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// rowsStep is one k of kernelF32x16Rows: B's row at pb + bo (32 values), A's four values at
// p0…p3 + ao, the eight accumulators updated.
func rowsStep(pb unsafe.Pointer, bo uintptr, p0, p1, p2, p3 unsafe.Pointer, ao uintptr,
	c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16) (_, _, _, _, _, _, _, _ archsimd.Float32x16) {
	b0, b1 := ldF32x16(pb, bo), ldF32x16(pb, bo+64)
	x0 := archsimd.BroadcastFloat32x16(ldF32(p0, ao))
	x1 := archsimd.BroadcastFloat32x16(ldF32(p1, ao))
	x2 := archsimd.BroadcastFloat32x16(ldF32(p2, ao))
	x3 := archsimd.BroadcastFloat32x16(ldF32(p3, ao))
	return x0.MulAdd(b0, c00), x0.MulAdd(b1, c01), x1.MulAdd(b0, c10), x1.MulAdd(b1, c11),
		x2.MulAdd(b0, c20), x2.MulAdd(b1, c21), b0.MulAdd(x3, c30), x3.MulAdd(b1, c31) // b0's last use takes the result
}

// ldF32x16 loads the 16 float32 at p + off bytes; ldF32 the one float32 there. The callers
// checked the bounds.
func ldF32x16(p unsafe.Pointer, off uintptr) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, off)))
}

func ldF32(p unsafe.Pointer, off uintptr) float32 { return *(*float32)(unsafe.Add(p, off)) }

// kernelF32x16RowsHalf is kernelF32x16Rows for the first 16 of the tile's 32 columns: b is
// still [kc, 32]; c gets 4 rows of 16.
func kernelF32x16RowsHalf(kc int, a0, a1, a2, a3, b, c []float32, ldc int, accumulate bool) {
	var c0, c1, c2, c3 archsimd.Float32x16
	a0 = a0[:kc]
	a1, a2, a3 = a1[:len(a0)], a2[:len(a0)], a3[:len(a0)]
	b = b[:32*kc]
	for k := range a0 {
		b0 := archsimd.LoadFloat32x16((*[16]float32)(b[32*k:][:16]))
		c0 = archsimd.BroadcastFloat32x16(a0[k]).MulAdd(b0, c0)
		c1 = archsimd.BroadcastFloat32x16(a1[k]).MulAdd(b0, c1)
		c2 = archsimd.BroadcastFloat32x16(a2[k]).MulAdd(b0, c2)
		c3 = archsimd.BroadcastFloat32x16(a3[k]).MulAdd(b0, c3)
	}
	storeFloat32x16(c[0*ldc:], c0, accumulate)
	storeFloat32x16(c[1*ldc:], c1, accumulate)
	storeFloat32x16(c[2*ldc:], c2, accumulate)
	storeFloat32x16(c[3*ldc:], c3, accumulate)
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// storeFloat32x16 writes (or adds) one vector to dst[0:16].
func storeFloat32x16(dst []float32, v archsimd.Float32x16, accumulate bool) {
	p := (*[16]float32)(dst[:16])
	if accumulate {
		v = v.Add(archsimd.LoadFloat32x16(p))
	}
	v.Store(p)
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
