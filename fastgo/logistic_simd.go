//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"simd/archsimd"
)

// logisticF32Vec sets dst[i] = 1 / (1 + exp(−src[i])) and reports true, or reports false (and
// does nothing) without AVX-512 or AVX2 (logisticF32AVX2: the same values). It computes as
// GoMLX's executor does — in float64, 1/(1 + e^−x) for x ≥ 0 and e^x/(1 + e^x) below, rounded
// once to float32 — with a vector float64 exp (exp64) in place of math.Exp: both are within
// about 1 ulp of float64, far below float32's rounding, so the results agree but for rare
// double roundings (1 ulp of float32).
func logisticF32Vec(dst, src []float32) bool {
	if !vecAVX512 {
		if vecAVX2 {
			logisticF32AVX2(dst, src)
		}
		return vecAVX2
	}
	one := archsimd.BroadcastFloat64x8(1)
	zero := archsimd.BroadcastFloat64x8(0)
	f := func(x32 archsimd.Float32x8) archsimd.Float32x8 {
		x := x32.ConvertToFloat64()
		neg := x.Less(zero)
		e := exp64(x.Min(zero.Sub(x))) // e^−|x|
		num := e.Merge(one, neg)       // x < 0: e^x / (1 + e^x); else 1 / (1 + e^−x)
		y := num.Div(one.Add(e))
		return x.Merge(y, x.IsNaN()).ConvertToFloat32() // NaN passes through
	}
	n := min(len(dst), len(src))
	i := 0
	for ; i+8 <= n; i += 8 {
		f(archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
	}
	if i < n {
		storePartF32x8(f(loadPartF32x8(src[i:n])), dst[i:n])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
	return true
}

// The constants of exp64 and its AVX2 twins (exp64x4, logistic8AVX2).
const (
	expMin    = -746                        // below it e^x rounds to 0
	expLn2Hi  = -6.93147180369123816490e-01 // −ln 2, high part (as Go's math.Exp)
	expLn2Lo  = -1.90821492927058770002e-10 // −ln 2, low part
	expPoly13 = 1.0 / 6227020800            // 1/13!, the polynomial's leading coefficient
)

// exp64 is e^x for float64 lanes x ≤ 0 (NaN lanes: any value): e^x = 2ⁿ · e^r with
// n = round(x / ln 2), r = x − n·ln 2 (ln 2 in two parts, as Go's math.Exp, |r| ≤ ln2/2), e^r
// by its Taylor polynomial of degree 13 (truncation ~2⁻⁵³) in Horner form, 2ⁿ by VSCALEFPD,
// which rounds once into the subnormals; x below −746 gives 0.
func exp64(x archsimd.Float64x8) archsimd.Float64x8 {
	c := x.Max(archsimd.BroadcastFloat64x8(expMin))
	n := c.Mul(archsimd.BroadcastFloat64x8(math.Log2E)).RoundToEvenScaled(0)
	r := n.MulAdd(archsimd.BroadcastFloat64x8(expLn2Hi), c)
	r = n.MulAdd(archsimd.BroadcastFloat64x8(expLn2Lo), r)
	p := archsimd.BroadcastFloat64x8(expPoly13)
	for k := 12; k >= 1; k-- {
		p = p.MulAdd(r, archsimd.BroadcastFloat64x8(invFactorial[k]))
	}
	p = p.MulAdd(r, archsimd.BroadcastFloat64x8(1))
	return p.Scale(n)
}

// invFactorial[k] = 1/k!.
var invFactorial = func() (f [13]float64) {
	f[0] = 1
	for k := 1; k < len(f); k++ {
		f[k] = f[k-1] / float64(k)
	}
	return f
}()
