//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// Vector loops of the element-wise executors (AVX-512, simd/archsimd; same build constraints as
// kernel_simd.go). Without AVX-512 they report false and the callers use plain Go.

import (
	"math"
	"simd/archsimd"
)

var vecAVX512 = archsimd.X86.AVX512()

// vecName names the vector loops in use (for Status).
func vecName() string {
	if vecAVX512 {
		return "avx512"
	}
	return "go"
}

// expF32Vec sets dst[i] = exp(src[i]) and reports true, or reports false (and does nothing)
// without AVX-512.
//
// exp(x) = 2ⁿ · exp(r) with n = round(x / ln 2) and r = x − n·ln 2 (|r| ≤ ln2/2, ln 2 in two
// parts, fused multiply-adds), exp(r) by its Taylor polynomial of degree 7 (truncation below
// 0.1 ulp) in Horner form, and 2ⁿ applied by VSCALEFPS, which rounds once into the subnormal
// range and overflows to +Inf. x is clamped to [−104, 88.8] first (beyond, exp is 0 or +Inf in
// float32) and NaN passes through. Error: about 1 ulp (the tests bound it by 2).
func expF32Vec(dst, src []float32) bool {
	if !vecAVX512 {
		return false
	}
	lo, hi := archsimd.BroadcastFloat32x16(-104), archsimd.BroadcastFloat32x16(88.8)
	log2e := archsimd.BroadcastFloat32x16(math.Log2E)
	negLn2Hi := archsimd.BroadcastFloat32x16(-0.693359375)
	negLn2Lo := archsimd.BroadcastFloat32x16(2.12194440e-4)
	c7 := archsimd.BroadcastFloat32x16(1.0 / 5040)
	c6 := archsimd.BroadcastFloat32x16(1.0 / 720)
	c5 := archsimd.BroadcastFloat32x16(1.0 / 120)
	c4 := archsimd.BroadcastFloat32x16(1.0 / 24)
	c3 := archsimd.BroadcastFloat32x16(1.0 / 6)
	c2 := archsimd.BroadcastFloat32x16(0.5)
	one := archsimd.BroadcastFloat32x16(1)
	exp := func(x archsimd.Float32x16) archsimd.Float32x16 {
		c := x.Max(lo).Min(hi)
		n := c.Mul(log2e).RoundToEvenScaled(0)
		r := n.MulAdd(negLn2Hi, c)
		r = n.MulAdd(negLn2Lo, r)
		p := c7.MulAdd(r, c6)
		p = p.MulAdd(r, c5)
		p = p.MulAdd(r, c4)
		p = p.MulAdd(r, c3)
		p = p.MulAdd(r, c2)
		p = p.MulAdd(r, one)
		p = p.MulAdd(r, one)
		return x.Merge(p.Scale(n), x.IsNaN())
	}
	n := min(len(dst), len(src))
	i := 0
	for ; i+16 <= n; i += 16 {
		exp(archsimd.LoadFloat32x16((*[16]float32)(src[i : i+16]))).Store((*[16]float32)(dst[i : i+16]))
	}
	if i < n {
		exp(archsimd.LoadFloat32x16SlicePart(src[i:n])).StoreSlicePart(dst[i:n])
	}
	return true
}

// maxF32Vec returns max(init, src...) as Go's max would (any NaN gives NaN; +0 above −0) and
// true, or false without AVX-512. The vector maximum is exact; rows that contain a NaN or whose
// maximum is a zero are redone in plain Go, where the sign of zero and NaN follow Go's rules.
func maxF32Vec(init float32, src []float32) (float32, bool) {
	if !vecAVX512 {
		return 0, false
	}
	acc0 := archsimd.BroadcastFloat32x16(init)
	acc1 := acc0
	var nan archsimd.Mask32x16
	i := 0
	for ; i+32 <= len(src); i += 32 {
		x0 := archsimd.LoadFloat32x16((*[16]float32)(src[i : i+16]))
		x1 := archsimd.LoadFloat32x16((*[16]float32)(src[i+16 : i+32]))
		acc0, acc1 = acc0.Max(x0), acc1.Max(x1)
		nan = nan.Or(x0.IsNaN()).Or(x1.IsNaN())
	}
	var lanes [16]float32
	acc0.Max(acc1).Store(&lanes)
	m := init
	for _, v := range lanes {
		m = max(m, v)
	}
	for _, v := range src[i:] {
		m = max(m, v)
	}
	if m == 0 || m != m || nan.ToBits() != 0 {
		return maxF32Go(init, src), true
	}
	return m, true
}
