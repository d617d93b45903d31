//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"simd/archsimd"
)

// logisticF32AVX2 is logisticF32Vec on AVX2 (dst[i] = 1 / (1 + exp(−src[i])) for i <
// min(len(dst), len(src))), the same float64 computation lane for lane — GoMLX's formula with
// exp64x4 for math.Exp, rounded once to float32 — in two vectors of 4 float64 per 8 float32.
func logisticF32AVX2(dst, src []float32) {
	one := archsimd.BroadcastFloat64x4(1)
	zero := archsimd.BroadcastFloat64x4(0)
	f := func(x32 archsimd.Float32x4) archsimd.Float32x4 {
		x := x32.ConvertToFloat64()
		neg := x.Less(zero)
		e := exp64x4(x.Min(zero.Sub(x))) // e^−|x|
		num := e.Merge(one, neg)         // x < 0: e^x / (1 + e^x); else 1 / (1 + e^−x)
		y := num.Div(one.Add(e))
		return x.Merge(y, x.IsNaN()).ConvertToFloat32() // NaN passes through
	}
	f8 := func(x archsimd.Float32x8) archsimd.Float32x8 {
		return x.SetLo(f(x.GetLo())).SetHi(f(x.GetHi()))
	}
	n := min(len(dst), len(src))
	i := 0
	for ; i+8 <= n; i += 8 {
		f8(archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
	}
	if i < n {
		storePartF32x8(f8(loadPartF32x8(src[i:n])), dst[i:n])
	}
}

// pow2F64x4 is 2ᵏ for integer-valued float64 lanes −1022 ≤ k ≤ 1023: k + 1023 + 1.5·2⁵² holds
// k + 1023 in its low mantissa bits, and shifting the bits left by 52 puts that into the
// exponent field and drops the rest.
func pow2F64x4(k archsimd.Float64x4) archsimd.Float64x4 {
	return k.Add(archsimd.BroadcastFloat64x4(1023 + 0x1.8p52)).AsUint64x4().ShiftAllLeft(52).AsFloat64x4()
}

// exp64x4 is exp64 on AVX2, the same values: e^x for float64 lanes x ≤ 0 (NaN lanes: any
// value), the same reduction and polynomial; VSCALEFPD (AVX-512) becomes n = n₁ + n₂, n₁ = ⌊n/2⌋,
// both in [−538, 0] (n ≥ −1076 after the clamp at −746): p·2^n₁ is exact and ·2^n₂ rounds once
// into the subnormals, as VSCALEFPD; x below −746 gives 0.
func exp64x4(x archsimd.Float64x4) archsimd.Float64x4 {
	c := x.Max(archsimd.BroadcastFloat64x4(-746))
	n := c.Mul(archsimd.BroadcastFloat64x4(math.Log2E)).RoundToEven()
	r := n.MulAdd(archsimd.BroadcastFloat64x4(-6.93147180369123816490e-01), c)
	r = n.MulAdd(archsimd.BroadcastFloat64x4(-1.90821492927058770002e-10), r)
	p := archsimd.BroadcastFloat64x4(1.0 / 6227020800) // 1/13!
	for k := 12; k >= 1; k-- {
		p = p.MulAdd(r, archsimd.BroadcastFloat64x4(invFactorial[k]))
	}
	p = p.MulAdd(r, archsimd.BroadcastFloat64x4(1))
	n1 := n.Mul(archsimd.BroadcastFloat64x4(0.5)).Floor()
	return p.Mul(pow2F64x4(n1)).Mul(pow2F64x4(n.Sub(n1)))
}
