//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"simd/archsimd"
)

// logisticF32AVX2 is logisticF32Vec on AVX2 (dst[i] = 1 / (1 + exp(−src[i])) for i <
// min(len(dst), len(src))), the same float64 computation lane for lane — GoMLX's formula with
// exp64x4 for math.Exp, rounded once to float32 — in two vectors of 4 float64 per 8 float32.
// The loop body, logistic8AVX2, is logistic4AVX2 and exp64x4 written out for both halves with
// its constants loaded as whole vectors (logisticK says why): 4.1 µs per 1536 values against
// 30.4 for the closures over logistic4AVX2 it replaced (BenchmarkLogisticF32AVX2);
// logisticF32AVX2Ref is the readable form, TestLogisticFusedSameBits holds the two equal bit
// for bit.
func logisticF32AVX2(dst, src []float32) {
	n := min(len(dst), len(src))
	i := 0
	for ; i+8 <= n; i += 8 {
		logistic8AVX2(archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
	}
	if i < n {
		storePartF32x8(logistic8AVX2(loadPartF32x8(src[i:n])), dst[i:n])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// logisticK holds logistic8AVX2's constants as whole vectors, loaded with VEX moves: built from
// float64 scalars (BroadcastFloat64x4(c), a zero vector), Go 1.26 materialises some through
// legacy-SSE instructions (XORPS, MOVUPS spills), and on this AMD EPYC each such instruction
// after 256-bit work stalled the next vector instruction for hundreds of cycles (perf annotate of
// BenchmarkLogisticF32AVX2: 85% of the samples on the six instructions after them).
var logisticK = func() (k [kPoly + 13][4]float64) {
	set := func(i int, v float64) { k[i] = [4]float64{v, v, v, v} }
	set(kZero, 0)
	set(kOne, 1)
	set(kMin, expMin)
	set(kLog2E, math.Log2E)
	set(kLn2Hi, expLn2Hi)
	set(kLn2Lo, expLn2Lo)
	set(kHalf, 0.5)
	set(kBias, pow2Bias)
	set(kPoly, expPoly13)
	for j := 1; j <= 12; j++ { // then 1/12!, …, 1/1!: exp64x4's polynomial, highest power first
		set(kPoly+j, invFactorial[13-j])
	}
	return k
}()

const (
	kZero = iota
	kOne
	kMin
	kLog2E
	kLn2Hi
	kLn2Lo
	kHalf
	kBias
	kPoly // 13 coefficients from here
)

// ldK is logisticK[i] as a vector.
func ldK(i int) archsimd.Float64x4 { return archsimd.LoadFloat64x4(&logisticK[i]) }

// logistic8AVX2 is logistic4AVX2 on both halves of x, interleaved, with exp64x4 inlined by hand
// and its constants loaded from logisticK.
func logistic8AVX2(x32 archsimd.Float32x8) archsimd.Float32x8 {
	one, zero := ldK(kOne), ldK(kZero)
	xa, xb := x32.GetLo().ConvertToFloat64(), x32.GetHi().ConvertToFloat64()
	// exp64x4 of −|x|
	lo := ldK(kMin)
	ca, cb := xa.Min(zero.Sub(xa)).Max(lo), xb.Min(zero.Sub(xb)).Max(lo)
	log2e := ldK(kLog2E)
	na, nb := ca.Mul(log2e).RoundToEven(), cb.Mul(log2e).RoundToEven()
	c := ldK(kLn2Hi)
	ra, rb := na.MulAdd(c, ca), nb.MulAdd(c, cb)
	c = ldK(kLn2Lo)
	ra, rb = na.MulAdd(c, ra), nb.MulAdd(c, rb)
	pa := ldK(kPoly)
	pb := pa
	for k := kPoly + 1; k < kPoly+13; k++ {
		c = ldK(k)
		pa, pb = pa.MulAdd(ra, c), pb.MulAdd(rb, c)
	}
	pa, pb = pa.MulAdd(ra, one), pb.MulAdd(rb, one)
	half, bias := ldK(kHalf), ldK(kBias)
	n1a, n1b := na.Mul(half).Floor(), nb.Mul(half).Floor()
	ea := pa.Mul(n1a.Add(bias).AsUint64x4().ShiftAllLeft(52).AsFloat64x4()).Mul(na.Sub(n1a).Add(bias).AsUint64x4().ShiftAllLeft(52).AsFloat64x4())
	eb := pb.Mul(n1b.Add(bias).AsUint64x4().ShiftAllLeft(52).AsFloat64x4()).Mul(nb.Sub(n1b).Add(bias).AsUint64x4().ShiftAllLeft(52).AsFloat64x4())
	// x < 0: e^x / (1 + e^x); else 1 / (1 + e^−x); NaN passes through
	ya := ea.Merge(one, xa.Less(zero)).Div(one.Add(ea))
	yb := eb.Merge(one, xb.Less(zero)).Div(one.Add(eb))
	ya, yb = xa.Merge(ya, xa.IsNaN()), xb.Merge(yb, xb.IsNaN())
	return x32.SetLo(ya.ConvertToFloat32()).SetHi(yb.ConvertToFloat32())
}

// logisticF32AVX2Ref is logisticF32AVX2 written for reading: logistic4AVX2 on each half.
func logisticF32AVX2Ref(dst, src []float32) {
	n := min(len(dst), len(src))
	i := 0
	for ; i+8 <= n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))
		x.SetLo(logistic4AVX2(x.GetLo())).SetHi(logistic4AVX2(x.GetHi())).Store((*[8]float32)(dst[i : i+8]))
	}
	if i < n {
		x := loadPartF32x8(src[i:n])
		storePartF32x8(x.SetLo(logistic4AVX2(x.GetLo())).SetHi(logistic4AVX2(x.GetHi())), dst[i:n])
	}
}

// logistic4AVX2 is 1 / (1 + exp(−x)) for 4 float32 lanes, computed in float64 as GoMLX does.
func logistic4AVX2(x32 archsimd.Float32x4) archsimd.Float32x4 {
	one := archsimd.BroadcastFloat64x4(1)
	zero := archsimd.BroadcastFloat64x4(0)
	x := x32.ConvertToFloat64()
	neg := x.Less(zero)
	e := exp64x4(x.Min(zero.Sub(x))) // e^−|x|
	num := e.Merge(one, neg)         // x < 0: e^x / (1 + e^x); else 1 / (1 + e^−x)
	y := num.Div(one.Add(e))
	return x.Merge(y, x.IsNaN()).ConvertToFloat32() // NaN passes through
}

// pow2Bias is 1023 + 1.5·2⁵²: pow2F64x4's shift of k into the exponent field.
const pow2Bias = 1023 + 0x1.8p52

// pow2F64x4 is 2ᵏ for integer-valued float64 lanes −1022 ≤ k ≤ 1023: k + 1023 + 1.5·2⁵² holds
// k + 1023 in its low mantissa bits, and shifting the bits left by 52 puts that into the
// exponent field and drops the rest.
func pow2F64x4(k archsimd.Float64x4) archsimd.Float64x4 {
	return k.Add(archsimd.BroadcastFloat64x4(pow2Bias)).AsUint64x4().ShiftAllLeft(52).AsFloat64x4()
}

// exp64x4 is exp64 on AVX2, the same values: e^x for float64 lanes x ≤ 0 (NaN lanes: any
// value), the same reduction and polynomial; VSCALEFPD (AVX-512) becomes n = n₁ + n₂, n₁ = ⌊n/2⌋,
// both in [−538, 0] (n ≥ −1076 after the clamp at −746): p·2^n₁ is exact and ·2^n₂ rounds once
// into the subnormals, as VSCALEFPD; x below −746 gives 0.
func exp64x4(x archsimd.Float64x4) archsimd.Float64x4 {
	c := x.Max(archsimd.BroadcastFloat64x4(expMin))
	n := c.Mul(archsimd.BroadcastFloat64x4(math.Log2E)).RoundToEven()
	r := n.MulAdd(archsimd.BroadcastFloat64x4(expLn2Hi), c)
	r = n.MulAdd(archsimd.BroadcastFloat64x4(expLn2Lo), r)
	p := archsimd.BroadcastFloat64x4(expPoly13)
	for k := 12; k >= 1; k-- {
		p = p.MulAdd(r, archsimd.BroadcastFloat64x4(invFactorial[k]))
	}
	p = p.MulAdd(r, archsimd.BroadcastFloat64x4(1))
	n1 := n.Mul(archsimd.BroadcastFloat64x4(0.5)).Floor()
	return p.Mul(pow2F64x4(n1)).Mul(pow2F64x4(n.Sub(n1)))
}
