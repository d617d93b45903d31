package parity

import "math"

// U is float32's unit roundoff, 2⁻²⁴: the u of the error model (errmodel.py), in which every
// bound is u·E.
const U = 0x1p-24

// DotBound is the error model's rule for a product A @ B of length n (errmodel.py, first row of
// its table: E = E_A·M_B + M_A·E_B + n·M), for one dot product a·b in float32 whose operands
// err by at most ea[i] and eb[i] (absolute, not in units of u):
//
//	|fl32(a·b) − a·b| ≤ Σ (ea[i]·|b[i]| + |a[i]|·eb[i]) + n·u·Σ |a[i]·b[i]|
//
// in any order of summation, with or without fused multiply-add, to first order. For tests of
// computations outside parity's reference files (a model's embeddings, a cosine).
func DotBound(a, b, ea, eb []float64) float64 {
	n := float64(len(a))
	var carried, magnitude float64
	for i := range a {
		carried += ea[i]*math.Abs(b[i]) + math.Abs(a[i])*eb[i]
		magnitude += math.Abs(a[i] * b[i])
	}
	return carried + n*U*magnitude
}

// CosineBound bounds the error of cos(a, b) = a·b / (|a|·|b|) computed in float32 from a and b
// whose elements err by at most ea[i] and eb[i]: DotBound for a·b, a·a and b·b, carried through
// the division and the square roots to first order (errmodel.py's a / b and rsqrt rules), plus
// their own rounding (u each, C_RSQRT = 4 ulps for a square root).
func CosineBound(a, b, ea, eb []float64) float64 {
	var dot, aa, bb float64
	for i := range a {
		dot, aa, bb = dot+a[i]*b[i], aa+a[i]*a[i], bb+b[i]*b[i]
	}
	if aa == 0 || bb == 0 {
		return math.Inf(1)
	}
	norms := math.Sqrt(aa * bb)
	cos := math.Abs(dot) / norms
	// δ|a|/|a| = δ(a·a)/(2·a·a), the same for b; the quotient adds its operands' relative errors.
	rel := DotBound(a, b, ea, eb)/norms + cos*(DotBound(a, a, ea, ea)/(2*aa)+DotBound(b, b, eb, eb)/(2*bb))
	const cRsqrt = 4
	return rel + cos*(2*cRsqrt+2)*U
}
