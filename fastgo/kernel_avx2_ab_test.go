//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"simd/archsimd"
	"testing"
)

// BenchmarkMicroKernelAVX2AB times the AVX2 float32 kernels against each other in one process,
// interleaved (abTime: medians of rounds of per-thread CPU time), kc = 128, panels in L1, as
// BenchmarkMicroKernel: the assembly kernel on A's rows and on the packed panel (asm/rows,
// asm/packed) and the FMA ceiling: 8 and 12 independent register FMA chains.
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
	abTime(b, 21, 2e6,
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
