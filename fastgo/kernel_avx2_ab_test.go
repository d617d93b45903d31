//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math/rand/v2"
	"simd/archsimd"
	"testing"
)

// TestKernelF32x8SameBits checks that the pointer-walk kernelF32x8Rows gives bit-identical
// results to the slice loop it replaced (kernelF32x8RowsSlice): the same FMAs
// in the same k order, for every kc 0…37 (the unrolled loop and its tail), with and without
// accumulate, NaN and Inf included.
func TestKernelF32x8SameBits(t *testing.T) {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		t.Skip("no AVX2+FMA on this CPU")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 1))
	const ldc = 19 // c rows wider than 16 and not a multiple of 8
	for kc := 0; kc <= 37; kc++ {
		a, b := randTileOperands(rng, kc)
		rows := [4][]float32{make([]float32, kc), make([]float32, kc), make([]float32, kc), make([]float32, kc)}
		for k := range kc {
			for r := range 4 {
				rows[r][k] = a[4*k+r]
			}
		}
		for _, acc := range []bool{false, true} {
			init := make([]float32, 4*ldc)
			for i := range init {
				init[i] = float32(rng.NormFloat64())
			}
			want, got := append([]float32(nil), init...), append([]float32(nil), init...)
			kernelF32x8RowsSlice(kc, rows[0], rows[1], rows[2], rows[3], b, want, ldc, acc)
			kernelF32x8Rows(kc, rows[0], rows[1], rows[2], rows[3], b, got, ldc, acc)
			sameBits(t, "kernelF32x8Rows", kc, acc, want, got)
		}
	}
}

// BenchmarkMicroKernelAVX2AB times the AVX2 float32 kernels against each other in one process,
// interleaved (abTime: medians of rounds of per-thread CPU time), kc = 128, panels in L1, as
// BenchmarkMicroKernel: the slice loop kernelF32x8Rows replaced (rows/slice), kernelF32x8Rows,
// kernelF32x8 (packed), the assembly kernel on A's rows and on the packed panel (asm/rows,
// asm/packed), and the FMA ceiling: 8 and 12 independent register FMA chains.
func BenchmarkMicroKernelAVX2AB(b *testing.B) {
	if _, ok := asmKernelF32(); !ok {
		b.Skip("no AVX2+FMA on this CPU")
	}
	const kc = 128
	a, bb := make([]float32, kc*4), make([]float32, kc*16)
	for i := range a {
		a[i] = float32(i%7) * 0.25
	}
	for i := range bb {
		bb[i] = float32(i%5) * 0.5
	}
	c := make([]float32, 4*16)
	const flops = 2 * kc * 4 * 16
	rows := func(i int) []float32 { return a[i*kc : (i+1)*kc] }
	abTime(b, 21, 2e6,
		abVariant{"rows/slice", flops, func() { kernelF32x8RowsSlice(kc, rows(0), rows(1), rows(2), rows(3), bb, c, 16, true) }},
		abVariant{"rows/ptr", flops, func() { kernelF32x8Rows(kc, rows(0), rows(1), rows(2), rows(3), bb, c, 16, true) }},
		abVariant{"packed", flops, func() { kernelF32x8(kc, a, bb, c, 16, true) }},
		abVariant{"asm/rows", flops, func() { kernelF32x8GroupsAsm(kc, a, kc, 1, 4*kc, 1, bb, c, 16, true) }},
		abVariant{"asm/packed", flops, func() { kernelF32x8Asm(kc, a, bb, c, 16, true) }},
		abVariant{"fma8", 2 * kc * 8 * 8, func() { fmaChains8(kc, c) }},
		abVariant{"fma12", 2 * kc * 12 * 8, func() { fmaChains12(kc, c) }},
	)
}

// fmaChains8 runs kc steps of 8 independent register FMA chains (Float32x8): the ceiling of an
// 8-accumulator kernel. c[0:12] seeds the chains (distinct, so that they are not merged); c[0:8]
// gets their sum.
func fmaChains8(kc int, c []float32) {
	c0, c1, c2, c3 := archsimd.BroadcastFloat32x8(c[0]), archsimd.BroadcastFloat32x8(c[1]), archsimd.BroadcastFloat32x8(c[2]), archsimd.BroadcastFloat32x8(c[3])
	c4, c5, c6, c7 := archsimd.BroadcastFloat32x8(c[4]), archsimd.BroadcastFloat32x8(c[5]), archsimd.BroadcastFloat32x8(c[6]), archsimd.BroadcastFloat32x8(c[7])
	x, y := archsimd.BroadcastFloat32x8(0.999), archsimd.BroadcastFloat32x8(0.001)
	for k := 0; ; {
		c0, c1, c2, c3 = c0.MulAdd(x, y), c1.MulAdd(x, y), c2.MulAdd(x, y), c3.MulAdd(x, y)
		c4, c5, c6, c7 = c4.MulAdd(x, y), c5.MulAdd(x, y), c6.MulAdd(x, y), c7.MulAdd(x, y)
		if k++; k >= kc {
			break
		}
	}
	c0.Add(c1).Add(c2).Add(c3).Add(c4).Add(c5).Add(c6).Add(c7).Store((*[8]float32)(c[:8]))
}

// fmaChains12 is fmaChains8 with 12 chains.
func fmaChains12(kc int, c []float32) {
	c0, c1, c2, c3 := archsimd.BroadcastFloat32x8(c[0]), archsimd.BroadcastFloat32x8(c[1]), archsimd.BroadcastFloat32x8(c[2]), archsimd.BroadcastFloat32x8(c[3])
	c4, c5, c6, c7 := archsimd.BroadcastFloat32x8(c[4]), archsimd.BroadcastFloat32x8(c[5]), archsimd.BroadcastFloat32x8(c[6]), archsimd.BroadcastFloat32x8(c[7])
	c8, c9, c10, c11 := archsimd.BroadcastFloat32x8(c[8]), archsimd.BroadcastFloat32x8(c[9]), archsimd.BroadcastFloat32x8(c[10]), archsimd.BroadcastFloat32x8(c[11])
	x, y := archsimd.BroadcastFloat32x8(0.999), archsimd.BroadcastFloat32x8(0.001)
	for k := 0; ; {
		c0, c1, c2, c3 = c0.MulAdd(x, y), c1.MulAdd(x, y), c2.MulAdd(x, y), c3.MulAdd(x, y)
		c4, c5, c6, c7 = c4.MulAdd(x, y), c5.MulAdd(x, y), c6.MulAdd(x, y), c7.MulAdd(x, y)
		c8, c9, c10, c11 = c8.MulAdd(x, y), c9.MulAdd(x, y), c10.MulAdd(x, y), c11.MulAdd(x, y)
		if k++; k >= kc {
			break
		}
	}
	c0.Add(c1).Add(c2).Add(c3).Add(c4).Add(c5).Add(c6).Add(c7).Add(c8).Add(c9).Add(c10).Add(c11).Store((*[8]float32)(c[:8]))
}

// kernelF32x8RowsSlice is the slice loop kernelF32x8Rows replaced (kernel_simd.go), kept for
// TestKernelF32x8SameBits and BenchmarkMicroKernelAVX2AB: kernelF32x8 with A read from its four
// rows, a0…a3: [kc] each.
func kernelF32x8RowsSlice(kc int, a0, a1, a2, a3, b, c []float32, ldc int, accumulate bool) {
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	a0 = a0[:kc]
	a1, a2, a3 = a1[:len(a0)], a2[:len(a0)], a3[:len(a0)]
	b = b[:16*kc]
	for k := range a0 {
		bk := b[16*k:][:16]
		b0 := archsimd.LoadFloat32x8((*[8]float32)(bk[0:8]))
		b1 := archsimd.LoadFloat32x8((*[8]float32)(bk[8:16]))
		x0 := archsimd.BroadcastFloat32x8(a0[k])
		c00 = x0.MulAdd(b0, c00)
		c01 = x0.MulAdd(b1, c01)
		x1 := archsimd.BroadcastFloat32x8(a1[k])
		c10 = x1.MulAdd(b0, c10)
		c11 = x1.MulAdd(b1, c11)
		x2 := archsimd.BroadcastFloat32x8(a2[k])
		c20 = x2.MulAdd(b0, c20)
		c21 = x2.MulAdd(b1, c21)
		x3 := archsimd.BroadcastFloat32x8(a3[k])
		c30 = x3.MulAdd(b0, c30)
		c31 = x3.MulAdd(b1, c31)
	}
	storeFloat32x8(c[0*ldc+0:], c00, accumulate)
	storeFloat32x8(c[0*ldc+8:], c01, accumulate)
	storeFloat32x8(c[1*ldc+0:], c10, accumulate)
	storeFloat32x8(c[1*ldc+8:], c11, accumulate)
	storeFloat32x8(c[2*ldc+0:], c20, accumulate)
	storeFloat32x8(c[2*ldc+8:], c21, accumulate)
	storeFloat32x8(c[3*ldc+0:], c30, accumulate)
	storeFloat32x8(c[3*ldc+8:], c31, accumulate)
}
