//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
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
		a, b := make([]float32, 4*kc), make([]float32, 16*kc)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		if kc > 3 {
			a[rng.IntN(len(a))] = float32(math.NaN())
			b[rng.IntN(len(b))] = float32(math.Inf(1))
		}
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

func sameBits(t *testing.T, name string, kc int, acc bool, want, got []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s kc=%d accumulate=%v: c[%d] = %v, want %v (bits %#x, %#x)", name, kc, acc, i, got[i], want[i], math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}

// BenchmarkMicroKernelAVX2AB times kernelF32x8Rows against the slice loop it replaced, alternating in one process (kc=256, panels in L1, as BenchmarkMicroKernel).
func BenchmarkMicroKernelAVX2AB(b *testing.B) {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		b.Skip("no AVX2+FMA on this CPU")
	}
	const kc = 256
	a, bb := make([]float32, kc*4), make([]float32, kc*16)
	for i := range a {
		a[i] = float32(i%7) * 0.25
	}
	for i := range bb {
		bb[i] = float32(i%5) * 0.5
	}
	c := make([]float32, 4*16)
	flops := 2 * float64(kc*4*16)
	for range 3 {
		b.Run("rows/slice", func(b *testing.B) {
			timeKernel(b, flops, func() { kernelF32x8RowsSlice(kc, a[0:kc], a[kc:2*kc], a[2*kc:3*kc], a[3*kc:], bb, c, 16, true) })
		})
		b.Run("rows/ptr", func(b *testing.B) {
			timeKernel(b, flops, func() { kernelF32x8Rows(kc, a[0:kc], a[kc:2*kc], a[2*kc:3*kc], a[3*kc:], bb, c, 16, true) })
		})
	}
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
