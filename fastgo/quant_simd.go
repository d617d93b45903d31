//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// AVX-512 packed-row kernels (simd/archsimd). One 32-weight block per step: 16 bytes (Q4_1
// nibbles) or 2×16 int8 (Q8_0) are widened to two vectors of 16 int32, converted to float32,
// scaled exactly as gguf.Dequantise does (Mul then Add, separately rounded — no fused
// multiply-add there), and multiplied into two float32 accumulators with x. The block's f16
// scales are converted on the scalar side (f16). AVX2-only CPUs get the plain-Go kernels.

import (
	"unsafe"

	"simd/archsimd"
)

func simdQuantKernels() (quantKernels, bool) {
	if !archsimd.X86.AVX512() {
		return quantKernels{}, false
	}
	return quantKernels{name: "avx512", q4_1: dotQ4_1AVX512, q8_0: dotQ8_0AVX512, dot: dotF32AVX512}, true
}

func dotQ4_1AVX512(blocks []byte, x []float32) float32 {
	var acc0, acc1 archsimd.Float32x16
	low := archsimd.BroadcastUint32x16(0x0f)
	for len(blocks) >= 20 && len(x) >= 32 {
		d := archsimd.BroadcastFloat32x16(f16(blocks))
		m := archsimd.BroadcastFloat32x16(f16(blocks[2:]))
		q := archsimd.LoadUint8x16((*[16]uint8)(blocks[4:20])).ExtendToUint32() // [16]uint32
		w0 := q.And(low).ConvertToFloat32().Mul(d).Add(m)                       // elements 0…15
		w1 := q.ShiftAllRight(4).ConvertToFloat32().Mul(d).Add(m)               // elements 16…31
		acc0 = w0.MulAdd(archsimd.LoadFloat32x16((*[16]float32)(x[0:16])), acc0)
		acc1 = w1.MulAdd(archsimd.LoadFloat32x16((*[16]float32)(x[16:32])), acc1)
		blocks, x = blocks[20:], x[32:]
	}
	return sum16(acc0.Add(acc1))
}

func dotQ8_0AVX512(blocks []byte, x []float32) float32 {
	var acc0, acc1 archsimd.Float32x16
	for len(blocks) >= 34 && len(x) >= 32 {
		d := archsimd.BroadcastFloat32x16(f16(blocks))
		q0 := archsimd.LoadInt8x16((*[16]int8)(unsafe.Pointer(&blocks[2])))
		q1 := archsimd.LoadInt8x16((*[16]int8)(unsafe.Pointer(&blocks[18])))
		w0 := q0.ExtendToInt32().ConvertToFloat32().Mul(d)
		w1 := q1.ExtendToInt32().ConvertToFloat32().Mul(d)
		acc0 = w0.MulAdd(archsimd.LoadFloat32x16((*[16]float32)(x[0:16])), acc0)
		acc1 = w1.MulAdd(archsimd.LoadFloat32x16((*[16]float32)(x[16:32])), acc1)
		blocks, x = blocks[34:], x[32:]
	}
	return sum16(acc0.Add(acc1))
}

// dotF32AVX512 is Σ a·b for len(a) == len(b) a multiple of 16 (packed rows are multiples of
// 32); a shorter tail is summed in Go.
func dotF32AVX512(a, b []float32) float32 {
	var acc archsimd.Float32x16
	b = b[:len(a)]
	i := 0
	for ; i+16 <= len(a); i += 16 {
		acc = archsimd.LoadFloat32x16((*[16]float32)(a[i:i+16])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(b[i:i+16])), acc)
	}
	s := sum16(acc)
	for ; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}

func sum16(v archsimd.Float32x16) float32 {
	var t [16]float32
	v.Store(&t)
	var s float32
	for _, x := range t {
		s += x
	}
	return s
}
