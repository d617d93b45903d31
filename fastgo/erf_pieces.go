//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"simd/archsimd"
)

// # erf in pieces on AVX-512
//
// erfRef's vector forms compute both of its branches in every lane — the Taylor series below
// |x| = 1, the Chebyshev series of erfc·e^(x²) and an exponential above — about 75 vector
// operations for 8 values, and keep the one the lane needs (erf4AVX2 still does; on AVX-512 it
// took 4.9 ns a value, BenchmarkErfLoops). erf8Pieces computes one
// polynomial in every lane, its coefficients picked per lane with a permute: |x| in [0, 4] is
// cut into 8 pieces [i/2, (i+1)/2] (8 float64 lanes: each coefficient of all 8 pieces is one
// vector), and on piece i
//
//	erf(x) = ±a · R_i(u),   a = min(|x|, 4),  u = a − (i/2 + 1/4),  |u| ≤ 1/4
//
// with R_i the polynomial of degree 13 that interpolates R(a) = erf(a)/a (even, smooth,
// 2/√π at 0) at the piece's 14 Chebyshev nodes (erfPieces; scripts/erf_pieces_fit.py, mpmath:
// relative error 9.5·10⁻¹⁷ with the coefficients rounded to float64). Writing erf as a·R keeps
// the relative error small near 0, where most float32 inputs lie. About 35 operations for 8
// values: 1.7 ns a value. Above a = 3.92 erf rounds to ±1 in float32, so the clamp at 4 changes no result, as
// in erfRef.
//
// Both give float32(math.Erf(float64(x))) — GoMLX's value — for every float32 input (checked
// for all 1.08·10⁹ positive float32 below 4.5, MHALAB_ERF_STRIDE=1; TestErfPiecesEqualsMathErf),
// so they agree bit for bit; erfPiecesRef is erf8Pieces for one value, written for reading
// (the same float64 operations in the same order, FMAs as math.FMA).

// erf8Pieces is erfPiecesRef on 8 float32 lanes, in float64 lanes.
func erf8Pieces(x32 archsimd.Float32x8) archsimd.Float32x8 {
	x := x32.ConvertToFloat64()
	sign := archsimd.BroadcastUint64x8(1 << 63)
	a := x.AsUint64x8().AndNot(sign).AsFloat64x8().Min(archsimd.BroadcastFloat64x8(erfClip)) // min(|x|, 4)
	t := a.Add(a).TruncScaled(0).Min(archsimd.BroadcastFloat64x8(erfPieceLast))              // the piece, 0 … 7
	u := a.Sub(t.MulAdd(archsimd.BroadcastFloat64x8(0.5), archsimd.BroadcastFloat64x8(0.25)))
	idx := t.ConvertToInt64().AsUint64x8()
	p := archsimd.LoadFloat64x8(&erfPieces[len(erfPieces)-1]).Permute(idx)
	for k := len(erfPieces) - 2; k >= 0; k-- {
		p = p.MulAdd(u, archsimd.LoadFloat64x8(&erfPieces[k]).Permute(idx))
	}
	y := a.Mul(p).AsUint64x8().Or(x.AsUint64x8().And(sign)).AsFloat64x8() // x's sign
	return x.Merge(y, x.IsNaN()).ConvertToFloat32()                       // NaN passes through
}

// erfPiecesRef is erf8Pieces for one value (above).
func erfPiecesRef(x32 float32) float32 {
	x := float64(x32)
	if x != x {
		return x32
	}
	a := math.Min(math.Abs(x), erfClip)
	t := math.Min(math.Trunc(a+a), erfPieceLast)
	u := a - math.FMA(t, 0.5, 0.25)
	i := int(t)
	p := erfPieces[len(erfPieces)-1][i]
	for k := len(erfPieces) - 2; k >= 0; k-- {
		p = math.FMA(p, u, erfPieces[k][i])
	}
	return float32(math.Copysign(a*p, x))
}

// erfPieceLast is the last piece's index.
const erfPieceLast = 7

// erfPieces[k][i] is the coefficient of uᵏ on piece i (scripts/erf_pieces_fit.py).
var erfPieces = [14][8]float64{
	{1.1053055606729478, 0.9482075115380202, 0.7383201026051666, 0.5638123835538186, 0.4437943481836973, 0.36359977384650194, 0.307690983760165, 0.26666663633939824},
	{-0.18116572518733395, -0.40703525645708377, -0.40143918412630064, -0.2920213643563818, -0.1940675685163019, -0.13200490785433025, -0.09466516761070198, -0.0711108679752552},
	{-0.33535122862677536, -0.10021739391910203, 0.08463022485375461, 0.11409435513063754, 0.07910993365189394, 0.04741550742720835, 0.029098554854832356, 0.018962016694543487},
	{0.10472176356831048, 0.1693415846251964, 0.06632445617046469, -0.013678325952361677, -0.02550461331552088, -0.016238224989869723, -0.008893152351656679, -0.005054412554261624},
	{0.08903638271867624, -0.02487282037511181, -0.05798708832194332, -0.01967079078802874, 0.0028538798571504753, 0.004720040483663739, 0.0026481793889089667, 0.0013441523505032817},
	{-0.03593292929465727, -0.03782654505510376, 0.008644841532754344, 0.01502580128967391, 0.0034683552481622696, -0.0007142662071239689, -0.0007182714348941038, -0.00035354170013537396},
	{-0.018398916072042873, 0.014605380537779006, 0.010125145264974128, -0.003464432150613117, -0.0028323165872685694, -0.000342931338473435, 0.0001399209003365581, 8.913839422429316e-05},
	{0.0089353284197211, 0.005106472688506138, -0.005199330036044083, -0.001482468214834562, 0.0009608269475165451, 0.0003596262891726046, 9.252465538540062e-06, -1.9430157663266867e-05},
	{0.0030422321022800093, -0.003739571887045924, -0.00039868393131092133, 0.001264298733433804, 1.7185272845606056e-05, -0.00016314130214694402, -2.7969195756966964e-05, 2.2138522901047386e-06},
	{-0.001750737117868005, -0.0003049105300849006, 0.0010210520413019685, -0.00021149395245376445, -0.0001718072706711467, 3.3424794230046934e-05, 1.657941428628903e-05, 1.0386712346457916e-06},
	{-0.00041271846613490397, 0.0006544176037259247, -0.00018190262688372953, -0.00013219117435400515, 7.126146952638349e-05, 7.850599119857269e-06, -5.819450999871749e-06, -9.712938189702768e-07},
	{0.00028339697179326413, -4.075598266179323e-05, -0.00011354821484282348, 7.239155379275405e-05, -2.7159054080844422e-06, -8.61612356340246e-06, 9.088902445969385e-07, 4.6584170819167937e-07},
	{4.5700310698435065e-05, -8.518736552854107e-05, 4.712765943251778e-05, -1.6060518273976788e-06, -8.86360819097706e-06, 2.671548621631236e-06, 3.2404576675547677e-07, -1.471158571251114e-07},
	{-3.812113111528275e-05, 1.4659723432242198e-05, 5.850452422557766e-06, -8.804503030337645e-06, 3.265381446680956e-06, 5.666489935061902e-09, -2.638985230583483e-07, 2.3120001161736373e-08},
}
