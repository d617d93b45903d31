//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"simd/archsimd"
)

// # erf in pieces
//
// Both loops compute one polynomial per lane, its coefficients picked per lane with a permute:
// |x| in [0, 4] is cut into 4 pieces [i, i+1], and on piece i
//
//	erf(x) = ±a · R_i(u),   a = min(|x|, 4),  u = a − (i + 1/2),  |u| ≤ 1/2
//
// with R_i the polynomial of degree 16 that interpolates R(a) = erf(a)/a (even, smooth, 2/√π at
// 0) at the piece's 17 Chebyshev nodes (erfPieces; scripts/erf_pieces_fit.py, mpmath: relative
// error 7.1·10⁻¹⁷ with the coefficients rounded to float64). Writing erf as a·R keeps the
// relative error small near 0, where most float32 inputs lie. Each coefficient of the 4 pieces
// is one vector: VPERMPD picks it per lane on AVX-512 (8 lanes), VPERMPS on AVX2 (4 lanes, each
// float64 as two float32 halves). Above a = 3.92 erf(x) rounds to ±1 in float32, so the clamp at
// 4 changes no result; NaN passes through, ±0 stays ±0, ±Inf gives ±1.
//
// About 45 vector operations for 8 values on AVX-512. What this replaced — the Taylor series of
// erf below |x| = 1, a Chebyshev series of erfc·e^(x²) and an exponential above, both computed
// in every lane and one kept — took about 75, 4.9 ns a value on AVX-512 and 9.6 on AVX2
// (BenchmarkErfLoops, 2-core AMD EPYC; now about 1.9 and 3.5).
//
// Both loops give float32(math.Erf(float64(x))) — GoMLX's value — for every float32 input: the
// float64 result's error, about 10⁻¹⁶ of it, could move a float32 rounding only where the exact
// value lay that close to a halfway point, and checking all 1.08·10⁹ positive float32 below 4.5
// (MHALAB_ERF_STRIDE=1 go test ./fastgo -run ErfRefEqualsMathErf) finds none; erf is odd in both.
// erfPiecesRef is the loops' computation for one value, written for reading (the same float64
// operations in the same order, FMAs as math.FMA).

// erf8Pieces is erfPiecesRef on 8 float32 lanes, in float64 lanes, with AVX-512.
func erf8Pieces(x32 archsimd.Float32x8) archsimd.Float32x8 {
	x := x32.ConvertToFloat64()
	sign := archsimd.BroadcastUint64x8(1 << 63)
	a := x.AsUint64x8().AndNot(sign).AsFloat64x8().Min(archsimd.BroadcastFloat64x8(erfClip)) // min(|x|, 4)
	t := a.TruncScaled(0).Min(archsimd.BroadcastFloat64x8(erfPieceLast))                     // the piece, 0 … 3
	u := a.Sub(t.Add(archsimd.BroadcastFloat64x8(0.5)))
	idx := t.ConvertToInt64().AsUint64x8()
	p := archsimd.LoadFloat64x8(&erfPieceRows[len(erfPieceRows)-1]).Permute(idx)
	for k := len(erfPieceRows) - 2; k >= 0; k-- {
		p = p.MulAdd(u, archsimd.LoadFloat64x8(&erfPieceRows[k]).Permute(idx))
	}
	y := a.Mul(p).AsUint64x8().Or(x.AsUint64x8().And(sign)).AsFloat64x8() // x's sign
	return x.Merge(y, x.IsNaN()).ConvertToFloat32()                       // NaN passes through
}

// erf8PiecesAVX2 is erf4PiecesAVX2 on both halves of x.
func erf8PiecesAVX2(x32 archsimd.Float32x8) archsimd.Float32x8 {
	return x32.SetLo(erf4PiecesAVX2(x32.GetLo())).SetHi(erf4PiecesAVX2(x32.GetHi()))
}

// erf4PiecesAVX2 is erfPiecesRef on 4 float32 lanes, in float64 lanes, with AVX2: the piece's
// coefficient as the float32 halves 2i and 2i+1 of a vector of the 4 pieces (VPERMPS), and its
// constants loaded from erfPieceK (see logisticK: on AMD's Zen 3, constants that Go materialises
// from float64 scalars go through legacy-SSE instructions, which stall the next 256-bit one).
func erf4PiecesAVX2(x32 archsimd.Float32x4) archsimd.Float32x4 {
	x := x32.ConvertToFloat64()
	k := func(i int) archsimd.Float64x4 { return archsimd.LoadFloat64x4(&erfPieceK[i]) }
	sign := k(ePSign).AsUint64x4()
	a := x.AsUint64x4().AndNot(sign).AsFloat64x4().Min(k(ePClip)) // min(|x|, 4)
	t := a.Floor().Min(k(ePLast))                                 // the piece, 0 … 3
	u := a.Sub(t.Add(k(ePHalf)))
	two := t.ConvertToInt32().AsUint32x4().ExtendToUint64().ShiftAllLeft(1)        // 2i
	idx := two.Or(two.ShiftAllLeft(32)).Or(k(ePOneHigh).AsUint64x4()).AsUint32x8() // halves 2i, 2i+1
	c := func(i int) archsimd.Float64x4 {
		return archsimd.LoadFloat64x4((*[4]float64)(erfPieceRows[i][:4])).AsFloat32x8().Permute(idx).AsFloat64x4()
	}
	p := c(len(erfPieceRows) - 1)
	for i := len(erfPieceRows) - 2; i >= 0; i-- {
		p = p.MulAdd(u, c(i))
	}
	y := a.Mul(p).AsUint64x4().Or(x.AsUint64x4().And(sign)).AsFloat64x4() // x's sign
	return x.Merge(y, x.IsNaN()).ConvertToFloat32()                       // NaN passes through
}

// erfPiecesRef is erf of one float32 as both loops compute it (above).
func erfPiecesRef(x32 float32) float32 {
	x := float64(x32)
	if x != x {
		return x32
	}
	a := math.Min(math.Abs(x), erfClip)
	t := math.Min(math.Floor(a), erfPieceLast)
	u := a - (t + 0.5)
	i := int(t)
	p := erfPieces[len(erfPieces)-1][i]
	for k := len(erfPieces) - 2; k >= 0; k-- {
		p = math.FMA(p, u, erfPieces[k][i])
	}
	return float32(math.Copysign(a*p, x))
}

// erfClip is the clamp of |x|, and erfPieceLast the last piece's index.
const (
	erfClip      = 4
	erfPieceLast = 3
)

// erfPieceRows[k] is erfPieces[k] twice over: the table VPERMPD reads with indices 0 … 3 (8
// lanes), whose first half VPERMPS reads (4 lanes).
var erfPieceRows = func() (r [len(erfPieces)][8]float64) {
	for k, c := range erfPieces {
		copy(r[k][:4], c[:])
		copy(r[k][4:], c[:])
	}
	return r
}()

// erfPieceK holds erf4PiecesAVX2's constants as whole vectors.
var erfPieceK = func() (k [ePOneHigh + 1][4]float64) {
	set := func(i int, v float64) { k[i] = [4]float64{v, v, v, v} }
	set(ePSign, math.Float64frombits(1<<63))
	set(ePClip, erfClip)
	set(ePLast, erfPieceLast)
	set(ePHalf, 0.5)
	set(ePOneHigh, math.Float64frombits(1<<32))
	return k
}()

const (
	ePSign = iota
	ePClip
	ePLast
	ePHalf
	ePOneHigh
)

// erfPieces[k][i] is the coefficient of uᵏ on piece i (scripts/erf_pieces_fit.py).
var erfPieces = [17][4]float64{
	{1.040999755626093, 0.6440700976502072, 0.399837219193022, 0.28571407340046506},
	{-0.32443435338129595, -0.35009320561771795, -0.15906357398506765, -0.0816310497067679},
	{-0.22991387217285217, 0.11446518118818286, 0.061447145363674384, 0.02331775763229916},
	{0.1669002180337757, 0.01619121527058817, -0.02123882232560958, -0.006650132035011621},
	{0.032358971822088405, -0.04052671581968418, 0.0050465788988451965, 0.0018806897783366122},
	{-0.0500715673220766, 0.01710695311748518, 0.0004283077266750102, -0.0005138781417790166},
	{5.956316150234518e-05, 0.0014794792571152435, -0.0012907191531066375, 0.00012460968440383403},
	{0.010691294121071362, -0.004148355132093872, 0.0007332516660377165, -1.897626586536238e-05},
	{-0.0012874113954866302, 0.0011904516018112219, -0.00018903260651064786, -4.366545767264167e-06},
	{-0.001759998490763805, 0.0003462474469609987, -2.4500848005776655e-05, 5.6277915817505495e-06},
	{0.0003810058557025497, -0.0002927735236520875, 4.132099971779501e-05, -2.933943101583333e-06},
	{0.00023266636535146962, 2.5533659653441257e-05, -1.4475603693754969e-05, 9.654219517596427e-07},
	{-7.263747395731986e-05, 3.476358480717376e-05, 1.572576625752049e-07, -1.4906070644854456e-07},
	{-2.5114207534910573e-05, -1.1133351526005604e-05, 1.8221854310912764e-06, -4.401091470045002e-08},
	{1.0698754269263847e-05, -1.9410689615414577e-06, -6.520905882491929e-07, 3.903125689182238e-08},
	{2.0692645921047493e-06, 1.5192517637482884e-06, -1.592158917057812e-08, -1.1846000543863375e-08},
	{-1.1832200741284728e-06, -6.387601273062531e-08, 6.82755246230145e-08, 8.316500918706401e-10},
}
