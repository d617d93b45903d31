//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"simd/archsimd"
	"testing"
)

// BenchmarkMicroKernelAVX512AB times the AVX-512 float32 kernel in one process against the FMA
// ceilings, interleaved (abTime: medians of rounds of per-thread CPU time), kc = 128, panels in
// L1: the 4×64 assembly kernel on A's rows and on the packed panel (asm/rows, asm/packed), its
// half tile (4×32, half), and 8 and 16 independent register FMA chains (Float32x16) — the
// ceiling of an 8-accumulator tile, and what archsimd code with more accumulators than Go's
// allocator keeps in registers gets.
func BenchmarkMicroKernelAVX512AB(b *testing.B) {
	if _, ok := asmKernelF32AVX512(); !ok || !archsimd.X86.AVX512() {
		b.Skip("no AVX-512 on this CPU")
	}
	const kc = 128
	a, bb := make([]float32, kc*4), make([]float32, kc*64)
	for i := range a {
		a[i] = float32(i%7) * 0.25
	}
	for i := range bb {
		bb[i] = float32(i%5) * 0.5
	}
	c := make([]float32, 4*64)
	const flops = 2 * kc * 4 * 64
	abTime(b, 21, 2e6,
		abVariant{"asm/rows", flops, func() { kernelF32x64GroupsAsm(kc, a, kc, 1, 4*kc, 1, bb, c, 64, true) }},
		abVariant{"asm/packed", flops, func() { kernelF32x64Asm(kc, a, bb, c, 64, true) }},
		abVariant{"asm/half", flops / 2, func() { kernelF32x64HalfGroupsAsm(kc, a, kc, 1, 4*kc, 1, bb, c, 64, true) }},
		abVariant{"fma8", 2 * kc * 8 * 16, func() { fmaChains8x16(kc, c) }},
		abVariant{"fma16", 2 * kc * 16 * 16, func() { fmaChains16x16(kc, c) }},
	)
}

// fmaChains8x16 runs kc steps of 8 independent register FMA chains (Float32x16): the ceiling of
// an 8-accumulator kernel. c[0:8] seeds the chains; c[0:16] gets their sum.
func fmaChains8x16(kc int, c []float32) {
	s := func(i int) archsimd.Float32x16 { return archsimd.BroadcastFloat32x16(c[i]) }
	c0, c1, c2, c3, c4, c5, c6, c7 := s(0), s(1), s(2), s(3), s(4), s(5), s(6), s(7)
	x, y := archsimd.BroadcastFloat32x16(0.999), archsimd.BroadcastFloat32x16(0.001)
	for k := 0; ; {
		c0, c1, c2, c3 = c0.MulAdd(x, y), c1.MulAdd(x, y), c2.MulAdd(x, y), c3.MulAdd(x, y)
		c4, c5, c6, c7 = c4.MulAdd(x, y), c5.MulAdd(x, y), c6.MulAdd(x, y), c7.MulAdd(x, y)
		if k++; k >= kc {
			break
		}
	}
	c0.Add(c1).Add(c2).Add(c3).Add(c4).Add(c5).Add(c6).Add(c7).Store((*[16]float32)(c[:16]))
}

// fmaChains16x16 is fmaChains8x16 with 16 chains (more than Go's allocator keeps in registers).
func fmaChains16x16(kc int, c []float32) {
	s := func(i int) archsimd.Float32x16 { return archsimd.BroadcastFloat32x16(c[i]) }
	c0, c1, c2, c3, c4, c5, c6, c7 := s(0), s(1), s(2), s(3), s(4), s(5), s(6), s(7)
	c8, c9, c10, c11, c12, c13, c14, c15 := s(8), s(9), s(10), s(11), s(12), s(13), s(14), s(15)
	x, y := archsimd.BroadcastFloat32x16(0.999), archsimd.BroadcastFloat32x16(0.001)
	for k := 0; ; {
		c0, c1, c2, c3 = c0.MulAdd(x, y), c1.MulAdd(x, y), c2.MulAdd(x, y), c3.MulAdd(x, y)
		c4, c5, c6, c7 = c4.MulAdd(x, y), c5.MulAdd(x, y), c6.MulAdd(x, y), c7.MulAdd(x, y)
		c8, c9, c10, c11 = c8.MulAdd(x, y), c9.MulAdd(x, y), c10.MulAdd(x, y), c11.MulAdd(x, y)
		c12, c13, c14, c15 = c12.MulAdd(x, y), c13.MulAdd(x, y), c14.MulAdd(x, y), c15.MulAdd(x, y)
		if k++; k >= kc {
			break
		}
	}
	c0.Add(c1).Add(c2).Add(c3).Add(c4).Add(c5).Add(c6).Add(c7).Add(c8).Add(c9).Add(c10).Add(c11).
		Add(c12).Add(c13).Add(c14).Add(c15).Store((*[16]float32)(c[:16]))
}
