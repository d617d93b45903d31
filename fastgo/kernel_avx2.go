//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// The AVX2 float32 micro-kernel on a pre-broadcast A micro-panel (the GEMM's "bcast" path,
// gemm.go: macroKernelBcast).
//
// Why pre-broadcast: archsimd has no broadcast from memory (BroadcastFloat32x8 is VMOVSS into an
// XMM register, then VBROADCASTSS register to register; no SSA rule folds the load: the load
// folding rules of simdAMD64.rules are for EVEX forms only), and on Zen 3 the register
// VBROADCASTSS is a shuffle µop on the FP pipes the FMAs need: a 4×16 kernel broadcasting its 4 A
// values per k in registers (kernelF32x8Rows, kernelF32x8, kernelF32x8RowsFill) runs at ~47
// GFLOP/cpu-s however it is unrolled. Storing every A value as a whole vector, [kc, 4, 8], turns
// each broadcast into a plain 32-byte load (6 loads per 8 FMAs). The GEMM fills that panel once
// per group of 4 rows and k-block (kernelF32x8RowsFill, while it computes the first column tile,
// or bcastF32Rows), then runs kernelF32x8Bcast across all the other column tiles of the B panel.
//
// Why a bottom-tested loop: Go 1.26's scheduler places values that have uses inside their own
// block first, so in a loop whose body is not the block of its phis, the last FMA of every
// accumulator (used only by the next iteration's phi) sinks below every load of the body; for
// more accumulators than 8 that is more live vectors than the 15 YMM registers Go allocates (X15
// is the ABI's zero register), and it spills. With the test at the bottom ("for { …; if n == 0 {
// break } }") body and phis are one block, the FMAs count as used in-block, and the body is
// scheduled in source order. Unrolled by 4, the register moves that put the rotated accumulators
// back (VFMADD213PS writes its result over the A or B operand, not over the accumulator) are paid
// once per 4 k.
//
// Why written out: every call of a Go helper the compiler inlines (a load wrapper, a step
// function, archsimd.BroadcastFloat32x8) leaves an inline mark, emitted as a 1-byte NOP wherever
// no instruction of the caller shares the call's line: 28 NOPs per 4 k in this loop with
// helpers, which took dispatch slots (75–80 GFLOP/cpu-s with them, 89–95 without).
//
// Per-thread CPU time, kc = 128, panels in L1, medians of interleaved rounds (abTime), this
// AVX2-only Zen 3 shared with other work: kernelF32x8Bcast 93–99 GFLOP/cpu-s in most layouts of
// its buffers, 80 in BenchmarkMicroKernelAVX2AB's (the same binary; not understood: no 4 KiB
// offset between A and B panels reproduced it), against 48–51 for kernelF32x8 and
// kernelF32x8Rows and ~50 for kernelF32x8RowsFill; 8 independent register FMA chains ~87,
// 12 chains ~98: at the FMA ceiling, so no larger tile was kept. (Before the NOPs were found: 5×16, 10 accumulators, 81–85 against 77–81 for 4×16;
// 12×8 with one B vector, kc = 64, 68–76 against 74–76; 6×16 spilled the copies of its A vectors,
// or, with each A vector loaded twice, 14 loads per 12 FMAs, ~68.) In the GEMM the kernel loses
// ~10–20% to B streaming from L2, C in L3 and the first tile's fill (BenchmarkGEMMAVX2AB).

import (
	"simd/archsimd"
	"unsafe"
)

// bcastKCF32 is the depth of a k-block on the bcast path: the pre-broadcast A panel of a row
// group, kc·4·8 float32 = 16 KiB, stays in Zen 3's 32 KiB L1 while the B micro-panels
// (kc·16 float32 = 8 KiB each) stream through it from L2. BenchmarkGEMMAVX2AB's shapes with
// k > 128, GFLOP/cpu-s for kc = 64 / 128 / 192 / 256: [4096, 512]·[512, 1536] 67.7 / 71.8 /
// 62.6 / 56.9, [1024, 4096]·[4096, 64] 55.3 / 61.1 / 50.2 / 50.8; 128 was best for all.
const bcastKCF32 = 128

// kernelF32x8Bcast: a: [kc, 4, 8] (every A value broadcast to a vector: bcastF32Rows),
// b: [kc, 16], c: 4 rows of ≥ 16, ldc apart. Each output is the FMA chain over k in order from
// zero, as kernelF32x8 and kernelF32x8Rows (the same bits for the same kc), then added to c with
// accumulate.
//
// The four steps of the unrolled loop are written out, with archsimd's intrinsics only: every
// call of a Go helper that the compiler inlines (ldF32x8, a step function) leaves an inline mark,
// emitted as a 1-byte NOP wherever no instruction of the caller shares the call's line — 28 NOPs
// in 4 k with helpers, which took dispatch slots: 75–80 GFLOP/cpu-s with helpers, 89–95 written
// out (BenchmarkMicroKernelAVX2AB, medians of interleaved rounds).
func kernelF32x8Bcast(kc int, a, b, c []float32, ldc int, accumulate bool) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	if kc > 0 {
		_ = a[32*kc-1] // A: [kc, 4, 8]
		_ = b[16*kc-1] // B: [kc, 16]
		pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
		if n := kc >> 2; n > 0 {
			for {
				{ // k + 0
					b0, b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 0))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 32)))
					x0 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 0)))
					c00, c01 = x0.MulAdd(b0, c00), x0.MulAdd(b1, c01)
					x1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 32)))
					c10, c11 = x1.MulAdd(b0, c10), x1.MulAdd(b1, c11)
					x2 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 64)))
					c20, c21 = x2.MulAdd(b0, c20), x2.MulAdd(b1, c21)
					x3 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 96)))
					c30, c31 = b0.MulAdd(x3, c30), b1.MulAdd(x3, c31) // b0, b1 die here: they take the results
				}
				{ // k + 1
					b0, b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 64))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 96)))
					x0 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 128)))
					c00, c01 = x0.MulAdd(b0, c00), x0.MulAdd(b1, c01)
					x1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 160)))
					c10, c11 = x1.MulAdd(b0, c10), x1.MulAdd(b1, c11)
					x2 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 192)))
					c20, c21 = x2.MulAdd(b0, c20), x2.MulAdd(b1, c21)
					x3 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 224)))
					c30, c31 = b0.MulAdd(x3, c30), b1.MulAdd(x3, c31) // b0, b1 die here: they take the results
				}
				{ // k + 2
					b0, b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 128))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 160)))
					x0 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 256)))
					c00, c01 = x0.MulAdd(b0, c00), x0.MulAdd(b1, c01)
					x1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 288)))
					c10, c11 = x1.MulAdd(b0, c10), x1.MulAdd(b1, c11)
					x2 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 320)))
					c20, c21 = x2.MulAdd(b0, c20), x2.MulAdd(b1, c21)
					x3 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 352)))
					c30, c31 = b0.MulAdd(x3, c30), b1.MulAdd(x3, c31) // b0, b1 die here: they take the results
				}
				{ // k + 3
					b0, b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 192))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 224)))
					x0 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 384)))
					c00, c01 = x0.MulAdd(b0, c00), x0.MulAdd(b1, c01)
					x1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 416)))
					c10, c11 = x1.MulAdd(b0, c10), x1.MulAdd(b1, c11)
					x2 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 448)))
					c20, c21 = x2.MulAdd(b0, c20), x2.MulAdd(b1, c21)
					x3 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 480)))
					c30, c31 = b0.MulAdd(x3, c30), b1.MulAdd(x3, c31) // b0, b1 die here: they take the results
				}
				n--
				if n == 0 {
					break
				}
				pa, pb = unsafe.Add(pa, 512), unsafe.Add(pb, 256) // never past the panels' ends
			}
		}
		for k := kc &^ 3; k < kc; k++ {
			pa, pb := unsafe.Pointer(&a[32*k]), unsafe.Pointer(&b[16*k])
			{
				b0, b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 0))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 32)))
				x0 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 0)))
				c00, c01 = x0.MulAdd(b0, c00), x0.MulAdd(b1, c01)
				x1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 32)))
				c10, c11 = x1.MulAdd(b0, c10), x1.MulAdd(b1, c11)
				x2 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 64)))
				c20, c21 = x2.MulAdd(b0, c20), x2.MulAdd(b1, c21)
				x3 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 96)))
				c30, c31 = b0.MulAdd(x3, c30), b1.MulAdd(x3, c31) // b0, b1 die here: they take the results
			}
		}
	}
	storeTile4x16(c, ldc, accumulate, c00, c01, c10, c11, c20, c21, c30, c31)
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// kernelF32x8RowsFill is kernelF32x8Bcast for the first column tile of a row group, reading A's
// four rows in place (a0…a3: [kc] each) and broadcasting each value in a register, as
// kernelF32x8Rows, while it stores the broadcast vectors to dst [kc, 4, 8] for the row group's
// other column tiles (what bcastF32Rows fills). The same FMAs in the same order as
// kernelF32x8Bcast: the same bits. A separate fill costs 4 vector stores per k, as much as a
// tile's 8 FMAs; here the stores run beside the FMAs. Written out without inlined helpers (see
// kernelF32x8Bcast).
func kernelF32x8RowsFill(kc int, a0, a1, a2, a3, dst, b, c []float32, ldc int, accumulate bool) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	if kc > 0 {
		_, _, _, _ = a0[kc-1], a1[kc-1], a2[kc-1], a3[kc-1] // A: 4 rows of kc
		_ = dst[32*kc-1]                                    // [kc, 4, 8]
		_ = b[16*kc-1]                                      // B: [kc, 16]
		p0, p1, p2, p3 := unsafe.Pointer(&a0[0]), unsafe.Pointer(&a1[0]), unsafe.Pointer(&a2[0]), unsafe.Pointer(&a3[0])
		pd, pb := unsafe.Pointer(&dst[0]), unsafe.Pointer(&b[0])
		var z archsimd.Float32x4
		if n := kc >> 2; n > 0 {
			for {
				{ // k + 0
					b0, b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 0))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 32)))
					x0 := z.SetElem(0, *(*float32)(unsafe.Add(p0, 0))).Broadcast1To8()
					x0.Store((*[8]float32)(unsafe.Add(pd, 0)))
					c00, c01 = x0.MulAdd(b0, c00), x0.MulAdd(b1, c01)
					x1 := z.SetElem(0, *(*float32)(unsafe.Add(p1, 0))).Broadcast1To8()
					x1.Store((*[8]float32)(unsafe.Add(pd, 32)))
					c10, c11 = x1.MulAdd(b0, c10), x1.MulAdd(b1, c11)
					x2 := z.SetElem(0, *(*float32)(unsafe.Add(p2, 0))).Broadcast1To8()
					x2.Store((*[8]float32)(unsafe.Add(pd, 64)))
					c20, c21 = x2.MulAdd(b0, c20), x2.MulAdd(b1, c21)
					x3 := z.SetElem(0, *(*float32)(unsafe.Add(p3, 0))).Broadcast1To8()
					x3.Store((*[8]float32)(unsafe.Add(pd, 96)))
					c30, c31 = b0.MulAdd(x3, c30), b1.MulAdd(x3, c31)
				}
				{ // k + 1
					b0, b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 64))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 96)))
					x0 := z.SetElem(0, *(*float32)(unsafe.Add(p0, 4))).Broadcast1To8()
					x0.Store((*[8]float32)(unsafe.Add(pd, 128)))
					c00, c01 = x0.MulAdd(b0, c00), x0.MulAdd(b1, c01)
					x1 := z.SetElem(0, *(*float32)(unsafe.Add(p1, 4))).Broadcast1To8()
					x1.Store((*[8]float32)(unsafe.Add(pd, 160)))
					c10, c11 = x1.MulAdd(b0, c10), x1.MulAdd(b1, c11)
					x2 := z.SetElem(0, *(*float32)(unsafe.Add(p2, 4))).Broadcast1To8()
					x2.Store((*[8]float32)(unsafe.Add(pd, 192)))
					c20, c21 = x2.MulAdd(b0, c20), x2.MulAdd(b1, c21)
					x3 := z.SetElem(0, *(*float32)(unsafe.Add(p3, 4))).Broadcast1To8()
					x3.Store((*[8]float32)(unsafe.Add(pd, 224)))
					c30, c31 = b0.MulAdd(x3, c30), b1.MulAdd(x3, c31)
				}
				{ // k + 2
					b0, b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 128))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 160)))
					x0 := z.SetElem(0, *(*float32)(unsafe.Add(p0, 8))).Broadcast1To8()
					x0.Store((*[8]float32)(unsafe.Add(pd, 256)))
					c00, c01 = x0.MulAdd(b0, c00), x0.MulAdd(b1, c01)
					x1 := z.SetElem(0, *(*float32)(unsafe.Add(p1, 8))).Broadcast1To8()
					x1.Store((*[8]float32)(unsafe.Add(pd, 288)))
					c10, c11 = x1.MulAdd(b0, c10), x1.MulAdd(b1, c11)
					x2 := z.SetElem(0, *(*float32)(unsafe.Add(p2, 8))).Broadcast1To8()
					x2.Store((*[8]float32)(unsafe.Add(pd, 320)))
					c20, c21 = x2.MulAdd(b0, c20), x2.MulAdd(b1, c21)
					x3 := z.SetElem(0, *(*float32)(unsafe.Add(p3, 8))).Broadcast1To8()
					x3.Store((*[8]float32)(unsafe.Add(pd, 352)))
					c30, c31 = b0.MulAdd(x3, c30), b1.MulAdd(x3, c31)
				}
				{ // k + 3
					b0, b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 192))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 224)))
					x0 := z.SetElem(0, *(*float32)(unsafe.Add(p0, 12))).Broadcast1To8()
					x0.Store((*[8]float32)(unsafe.Add(pd, 384)))
					c00, c01 = x0.MulAdd(b0, c00), x0.MulAdd(b1, c01)
					x1 := z.SetElem(0, *(*float32)(unsafe.Add(p1, 12))).Broadcast1To8()
					x1.Store((*[8]float32)(unsafe.Add(pd, 416)))
					c10, c11 = x1.MulAdd(b0, c10), x1.MulAdd(b1, c11)
					x2 := z.SetElem(0, *(*float32)(unsafe.Add(p2, 12))).Broadcast1To8()
					x2.Store((*[8]float32)(unsafe.Add(pd, 448)))
					c20, c21 = x2.MulAdd(b0, c20), x2.MulAdd(b1, c21)
					x3 := z.SetElem(0, *(*float32)(unsafe.Add(p3, 12))).Broadcast1To8()
					x3.Store((*[8]float32)(unsafe.Add(pd, 480)))
					c30, c31 = b0.MulAdd(x3, c30), b1.MulAdd(x3, c31)
				}
				n--
				if n == 0 {
					break
				}
				p0, p1, p2, p3 = unsafe.Add(p0, 16), unsafe.Add(p1, 16), unsafe.Add(p2, 16), unsafe.Add(p3, 16)
				pd, pb = unsafe.Add(pd, 512), unsafe.Add(pb, 256)
			}
		}
		for k := kc &^ 3; k < kc; k++ {
			p0, p1, p2, p3 := unsafe.Pointer(&a0[k]), unsafe.Pointer(&a1[k]), unsafe.Pointer(&a2[k]), unsafe.Pointer(&a3[k])
			pd, pb := unsafe.Pointer(&dst[32*k]), unsafe.Pointer(&b[16*k])
			{
				b0, b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 0))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 32)))
				x0 := z.SetElem(0, *(*float32)(unsafe.Add(p0, 0))).Broadcast1To8()
				x0.Store((*[8]float32)(unsafe.Add(pd, 0)))
				c00, c01 = x0.MulAdd(b0, c00), x0.MulAdd(b1, c01)
				x1 := z.SetElem(0, *(*float32)(unsafe.Add(p1, 0))).Broadcast1To8()
				x1.Store((*[8]float32)(unsafe.Add(pd, 32)))
				c10, c11 = x1.MulAdd(b0, c10), x1.MulAdd(b1, c11)
				x2 := z.SetElem(0, *(*float32)(unsafe.Add(p2, 0))).Broadcast1To8()
				x2.Store((*[8]float32)(unsafe.Add(pd, 64)))
				c20, c21 = x2.MulAdd(b0, c20), x2.MulAdd(b1, c21)
				x3 := z.SetElem(0, *(*float32)(unsafe.Add(p3, 0))).Broadcast1To8()
				x3.Store((*[8]float32)(unsafe.Add(pd, 96)))
				c30, c31 = b0.MulAdd(x3, c30), b1.MulAdd(x3, c31)
			}
		}
	}
	storeTile4x16(c, ldc, accumulate, c00, c01, c10, c11, c20, c21, c30, c31)
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// storeTile4x16 writes (or adds, with accumulate) the 4×16 tile c00…c31 to c: 4 rows of 16,
// ldc apart (ldc ≥ 16).
func storeTile4x16(c []float32, ldc int, accumulate bool, c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8) {
	_ = c[3*ldc+15]
	p0 := unsafe.Pointer(&c[0])
	p1, p2, p3 := unsafe.Add(p0, 4*ldc), unsafe.Add(p0, 8*ldc), unsafe.Add(p0, 12*ldc)
	if accumulate {
		c00 = c00.Add(archsimd.LoadFloat32x8((*[8]float32)(p0)))
		c01 = c01.Add(archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p0, 32))))
		c10 = c10.Add(archsimd.LoadFloat32x8((*[8]float32)(p1)))
		c11 = c11.Add(archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p1, 32))))
		c20 = c20.Add(archsimd.LoadFloat32x8((*[8]float32)(p2)))
		c21 = c21.Add(archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p2, 32))))
		c30 = c30.Add(archsimd.LoadFloat32x8((*[8]float32)(p3)))
		c31 = c31.Add(archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p3, 32))))
	}
	c00.Store((*[8]float32)(p0))
	c01.Store((*[8]float32)(unsafe.Add(p0, 32)))
	c10.Store((*[8]float32)(p1))
	c11.Store((*[8]float32)(unsafe.Add(p1, 32)))
	c20.Store((*[8]float32)(p2))
	c21.Store((*[8]float32)(unsafe.Add(p2, 32)))
	c30.Store((*[8]float32)(p3))
	c31.Store((*[8]float32)(unsafe.Add(p3, 32)))
}

// bcastF32Rows fills dst [kc, 4, 8] with dst[k, r, :] = a_r[k·stride] broadcast, for the four
// rows a0…a3 (each with at least (kc−1)·stride + 1 values): stride 1 reads A's rows in place,
// stride 4 a packed [kc, 4] micro-panel.
func bcastF32Rows(dst, a0, a1, a2, a3 []float32, stride, kc int) {
	if kc <= 0 {
		return
	}
	last := (kc - 1) * stride
	_, _, _, _ = a0[last], a1[last], a2[last], a3[last]
	_ = dst[32*kc-1]
	p0, p1, p2, p3 := unsafe.Pointer(&a0[0]), unsafe.Pointer(&a1[0]), unsafe.Pointer(&a2[0]), unsafe.Pointer(&a3[0])
	pd := unsafe.Pointer(&dst[0])
	step := uintptr(4 * stride)
	var ao, do uintptr // offsets from the bases: no pointer past an end
	var z archsimd.Float32x4
	// No inlined helpers (BroadcastFloat32x8 is one): their inline marks would be NOPs
	// (kernelF32x8Bcast).
	for range kc {
		z.SetElem(0, *(*float32)(unsafe.Add(p0, ao))).Broadcast1To8().Store((*[8]float32)(unsafe.Add(pd, do)))
		z.SetElem(0, *(*float32)(unsafe.Add(p1, ao))).Broadcast1To8().Store((*[8]float32)(unsafe.Add(pd, do+32)))
		z.SetElem(0, *(*float32)(unsafe.Add(p2, ao))).Broadcast1To8().Store((*[8]float32)(unsafe.Add(pd, do+64)))
		z.SetElem(0, *(*float32)(unsafe.Add(p3, ao))).Broadcast1To8().Store((*[8]float32)(unsafe.Add(pd, do+96)))
		ao, do = ao+step, do+128
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}
