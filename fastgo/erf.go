package fastgo

import (
	"math"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
)

// Erf (the exact GELU of all-MiniLM-L6-v2's feed-forward layers, x/2·(1 + erf(x/√2))): GoMLX
// computes float32(math.Erf(float64(x))) element by element, ~12 ns each on one core — a third
// of MiniLM's forward pass on this backend. float32 runs here on AVX-512 or AVX2 lanes
// (erfF32Vec) in float64, rounded once to float32: the same values as GoMLX's for every float32
// input (checked for all 1.08·10⁹ positive float32 below 4.5 — erf is odd, and above 3.92 both
// give ±1 — with MHALAB_ERF_STRIDE=1 go test ./fastgo -run ErfRefEqualsMathErf; a NaN gives a
// NaN). float64 (and float32 without either vector unit) runs GoMLX's formula, cut over the
// team.
//
// The AVX2 loop's float64 computation (erfRef), for x = float64(x32) and a = |x| — the AVX-512
// loop computes one polynomial per piece of [0, 4] instead (erf_pieces.go):
//
//	a < 1:      erf(x) = x · P(x²), P the Taylor series of erf(x)/x to the x³⁰ term
//	            (erfTaylor; the first left out is below 3·10⁻¹⁴ of the sum at a = 1)
//	1 ≤ a:      erf(x) = ±(1 − e^(−a²) · G(a)), a clamped to 4, G(a) = erfc(a)·e^(a²) as a
//	            Chebyshev series of degree 18 on [1, 4] (erfcxCheb, scripts/erf_fit.py: relative
//	            error 1.6·10⁻¹³), e^(−a²) by exp64x4 (a² is exact: a float32 squared fits a float64)
//
// Above a = 3.92 erf(x) rounds to ±1 in float32, so the clamp at 4 changes no result; NaN
// passes through, ±0 stays ±0, ±Inf gives ±1. The float64 value's error, below 10⁻¹² of it,
// could move a float32 rounding only where the exact value lay that close to a halfway point:
// no float32 input does.

//go:linkname gomlxErf github.com/gomlx/gomlx/backends/simplego.execErf
func gomlxErf(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

func execErf(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	return execUnaryFloat(opErf, gomlxErf, erfF32, erfF64, erfGrain, backend, node, inputs, inputsOwned)
}

// erfGrain is the fewest float32 elements of a range of Erf: about as dear per element as
// Logistic (logisticGrain).
const erfGrain = 768

// erfF32 is erf on the AVX-512 or AVX2 loop, else GoMLX's formula.
func erfF32(dst, src []float32) {
	if !erfF32Vec(dst, src) {
		for i, x := range src {
			dst[i] = float32(math.Erf(float64(x)))
		}
	}
}

// erfF64 is GoMLX's formula.
func erfF64(dst, src []float64) {
	for i, x := range src {
		dst[i] = math.Erf(x)
	}
}

// erfTaylor[n] is the coefficient of tⁿ (t = x²) in erf(x)/x = 2/√π · Σ (−1)ⁿ tⁿ / (n!·(2n+1)),
// n = 0 … 15.
var erfTaylor = func() (c [16]float64) {
	f := 2 / math.SqrtPi // 2/√π · (−1)ⁿ/n!
	for n := range c {
		if n > 0 {
			f /= -float64(n)
		}
		c[n] = f / float64(2*n+1)
	}
	return c
}()

// erfcxCheb are the Chebyshev coefficients of G(a) = erfc(a)·e^(a²) on [1, 4], in s =
// (2a − 5)/3: G = Σ c_k T_k(s) (printed by scripts/erf_fit.py).
var erfcxCheb = [...]float64{
	0.24442575284923562,
	-0.13589862891594603,
	0.03563511414853496,
	-0.00888409861822254,
	0.002118423997553122,
	-0.00048539876408013185,
	0.00010727375453764013,
	-2.2936634481931467e-05,
	4.756874691576589e-06,
	-9.589944833404656e-07,
	1.8829006875472005e-07,
	-3.606320671101241e-08,
	6.7476019720579125e-09,
	-1.2349070656194618e-09,
	2.2131490766347103e-10,
	-3.8879619574922274e-11,
	6.7011689416203724e-12,
	-1.1334957345058923e-12,
	1.837698616864651e-13,
}

// The tail's mapping s = a·erfS1 + erfS0 of [1, 4] onto [−1, 1], and its clamp.
const (
	erfS1   = 2.0 / 3
	erfS0   = -5.0 / 3
	erfClip = 4
)
