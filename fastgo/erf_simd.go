//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"simd/archsimd"
)

// erfF32Vec sets dst[i] = erf(src[i]) for i < min(len(dst), len(src)) as erf.go describes and
// reports true, or reports false (and does nothing) without AVX-512 or AVX2. The AVX-512 loop
// computes erfPiecesRef lane for lane (erf_pieces.go), the AVX2 loop erfRef: both the bits of
// GoMLX's float32(math.Erf(float64(x))) for every input.
func erfF32Vec(dst, src []float32) bool {
	n := min(len(dst), len(src))
	switch {
	case vecAVX512:
		i := 0
		for ; i+8 <= n; i += 8 {
			erf8Pieces(archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
		}
		if i < n {
			storePartF32x8(erf8Pieces(loadPartF32x8(src[i:n])), dst[i:n])
		}
	case vecAVX2:
		i := 0
		for ; i+8 <= n; i += 8 {
			erf8AVX2(archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
		}
		if i < n {
			storePartF32x8(erf8AVX2(loadPartF32x8(src[i:n])), dst[i:n])
		}
	default:
		return false
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
	return true
}

// erfRef is the loops' computation of one value written for reading (erf.go gives the
// formulas): the same float64 operations in the same order, FMAs as math.FMA and exp64's 2ⁿ as
// math.Ldexp (exact here: e^(−a²) for a in [1, 4] is a normal number), so that it gives the
// loops' bits.
func erfRef(x32 float32) float32 {
	x := float64(x32)
	if x != x {
		return x32
	}
	a := math.Abs(x)
	if a < 1 {
		t := x * x
		p := erfTaylor[len(erfTaylor)-1]
		for k := len(erfTaylor) - 2; k >= 0; k-- {
			p = math.FMA(p, t, erfTaylor[k])
		}
		return float32(x * p)
	}
	a = math.Min(a, erfClip)
	s := math.FMA(a, erfS1, erfS0)
	s2 := s + s
	var b1, b2 float64 // Clenshaw: b_k = c_k + 2s·b_{k+1} − b_{k+2}
	for k := len(erfcxCheb) - 1; k >= 1; k-- {
		b1, b2 = math.FMA(s2, b1, erfcxCheb[k])-b2, b1
	}
	g := math.FMA(s, b1, erfcxCheb[0]) - b2
	e := exp64Ref(-(a * a))
	return float32(math.Copysign(math.FMA(-e, g, 1), x))
}

// exp64Ref is exp64 for one value −746 ≤ x ≤ 0 whose result is a normal number.
func exp64Ref(x float64) float64 {
	c := math.Max(x, expMin)
	n := math.RoundToEven(c * math.Log2E)
	r := math.FMA(n, expLn2Hi, c)
	r = math.FMA(n, expLn2Lo, r)
	p := expPoly13
	for k := 12; k >= 1; k-- {
		p = math.FMA(p, r, invFactorial[k])
	}
	p = math.FMA(p, r, 1)
	return math.Ldexp(p, int(n))
}

// erfK holds erf8AVX2's constants as whole vectors, loaded with VEX moves (see logisticK: on
// AMD's Zen 3, constants that Go materialises from float64 scalars go through legacy-SSE
// instructions, which stall the next 256-bit instruction for hundreds of cycles).
var erfK = func() (k [eKCheb + len(erfcxCheb)][4]float64) {
	set := func(i int, v float64) { k[i] = [4]float64{v, v, v, v} }
	set(eKZero, 0)
	set(eKOne, 1)
	set(eKSign, math.Float64frombits(1<<63))
	set(eKClip, erfClip)
	set(eKS1, erfS1)
	set(eKS0, erfS0)
	set(eKMin, expMin)
	set(eKLog2E, math.Log2E)
	set(eKLn2Hi, expLn2Hi)
	set(eKLn2Lo, expLn2Lo)
	set(eKHalf, 0.5)
	set(eKBias, pow2Bias)
	set(eKExp, expPoly13)
	for j := 1; j <= 12; j++ { // then 1/12!, …, 1/1!
		set(eKExp+j, invFactorial[13-j])
	}
	for j := range erfTaylor {
		set(eKTaylor+j, erfTaylor[j])
	}
	for j := range erfcxCheb {
		set(eKCheb+j, erfcxCheb[j])
	}
	return k
}()

const (
	eKZero = iota
	eKOne
	eKSign
	eKClip
	eKS1
	eKS0
	eKMin
	eKLog2E
	eKLn2Hi
	eKLn2Lo
	eKHalf
	eKBias
	eKExp                    // 13 coefficients from here
	eKTaylor = eKExp + 13    // len(erfTaylor) from here
	eKCheb   = eKTaylor + 16 // len(erfcxCheb) from here
)

// ldE is erfK[i] as a vector.
func ldE(i int) archsimd.Float64x4 { return archsimd.LoadFloat64x4(&erfK[i]) }

// erf8AVX2 is erf4AVX2 on both halves of x.
func erf8AVX2(x32 archsimd.Float32x8) archsimd.Float32x8 {
	return x32.SetLo(erf4AVX2(x32.GetLo())).SetHi(erf4AVX2(x32.GetHi()))
}

// erf4AVX2 is erfRef on 4 float32 lanes, in float64 lanes, with AVX2 (both of erfRef's branches
// for every lane, then the one its |x| picks): its constants from erfK, and exp64x4's
// arithmetic written out with them (2ⁿ as two factors, as exp64x4).
func erf4AVX2(x32 archsimd.Float32x4) archsimd.Float32x4 {
	x := x32.ConvertToFloat64()
	sign, zero, one := ldE(eKSign).AsUint64x4(), ldE(eKZero), ldE(eKOne)
	a := x.AsUint64x4().AndNot(sign).AsFloat64x4()
	t := x.Mul(x)
	p := ldE(eKTaylor + len(erfTaylor) - 1)
	for k := len(erfTaylor) - 2; k >= 0; k-- {
		p = p.MulAdd(t, ldE(eKTaylor+k))
	}
	small := x.Mul(p)
	c := a.Min(ldE(eKClip))
	s := c.MulAdd(ldE(eKS1), ldE(eKS0))
	s2 := s.Add(s)
	b1, b2 := zero, zero
	for k := len(erfcxCheb) - 1; k >= 1; k-- {
		b1, b2 = s2.MulAdd(b1, ldE(eKCheb+k)).Sub(b2), b1
	}
	g := s.MulAdd(b1, ldE(eKCheb)).Sub(b2)
	// e = exp64x4(−c²)
	u := zero.Sub(c.Mul(c)).Max(ldE(eKMin))
	n := u.Mul(ldE(eKLog2E)).RoundToEven()
	r := n.MulAdd(ldE(eKLn2Hi), u)
	r = n.MulAdd(ldE(eKLn2Lo), r)
	q := ldE(eKExp)
	for k := eKExp + 1; k < eKExp+13; k++ {
		q = q.MulAdd(r, ldE(k))
	}
	q = q.MulAdd(r, one)
	bias := ldE(eKBias)
	n1 := n.Mul(ldE(eKHalf)).Floor()
	e := q.Mul(n1.Add(bias).AsUint64x4().ShiftAllLeft(52).AsFloat64x4()).Mul(n.Sub(n1).Add(bias).AsUint64x4().ShiftAllLeft(52).AsFloat64x4())
	tail := zero.Sub(e).MulAdd(g, one)
	tail = tail.AsUint64x4().Or(x.AsUint64x4().And(sign)).AsFloat64x4()
	y := small.Merge(tail, a.Less(one))
	return x.Merge(y, x.IsNaN()).ConvertToFloat32()
}
