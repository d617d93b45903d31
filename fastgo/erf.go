package fastgo

import (
	"math"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
)

// Erf (the exact GELU of all-MiniLM-L6-v2's feed-forward layers, x/2·(1 + erf(x/√2))): GoMLX
// computes float32(math.Erf(float64(x))) element by element, ~12 ns each on one core — a third
// of MiniLM's forward pass on this backend. float32 runs here on AVX-512 or AVX2 lanes
// (erfF32Vec) in float64 — one polynomial of degree 16 per piece [i, i+1] of |x| in [0, 4]
// (erf_pieces.go) — rounded once to float32: the same values as GoMLX's for every float32 input
// (checked for all 1.08·10⁹ positive float32 below 4.5 — erf is odd, and above 3.92 both give
// ±1 — with MHALAB_ERF_STRIDE=1 go test ./fastgo -run ErfRefEqualsMathErf; a NaN gives a NaN).
// float64 (and float32 without either vector unit) runs GoMLX's formula, cut over the team.

//go:linkname gomlxErf github.com/gomlx/gomlx/backends/simplego.execErf
func gomlxErf(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

func execErf(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	return execUnaryFloat(opErf, gomlxErf, erfF32, erfF64, erfGrain, backend, node, inputs, inputsOwned)
}

// erfGrain is the fewest float32 elements of a range of Erf, set when erf cost about as much
// per element as Logistic (logisticGrain); the pieces (erf_pieces.go) made it about 2.6 times
// cheaper, and the grain was not measured again.
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
