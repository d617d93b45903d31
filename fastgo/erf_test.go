package fastgo_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// TestErfMatchesGoMLX: Erf over GELU's inputs (N(0, 2²), uniform over −6 … 6, special values)
// and float64, through the executor, equal to GoMLX's bit for bit (a NaN for a NaN): float32 on
// each vector loop (erf.go's float64 formulas round to GoMLX's values for every float32), float64
// GoMLX's own code.
func TestErfMatchesGoMLX(t *testing.T) {
	eachVec(t, func(t *testing.T) { unaryVsGoMLX(t, backends.OpTypeErf, Erf, 11, erfInput, false) })
}

// erfInput is case c's float32 input: mostly N(0, 2²) (GELU's x/√2 of pre-activations), some
// uniform over −6 … 6 (both ends round to ±1), some special values (the branch point 1, the
// clamp 4, tiny and subnormal values); every fourth case long enough for several goroutines.
func erfInput(rng *rand.Rand, c int) *tensors.Tensor {
	dims := randomDims(rng, 1+rng.IntN(3))
	if c%4 == 0 {
		dims = []int{40000 + rng.IntN(3000)}
	}
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1, -1, math.Nextafter32(1, 0), math.Nextafter32(1, 2), 4, -4, 3.9192, 1e-8, -1e-8, 1e-40, -1e-45, 0.5, -0.5}
	v := make([]float32, prodDims(dims))
	for i := range v {
		switch r := rng.IntN(40); {
		case r == 0:
			v[i] = specials[rng.IntN(len(specials))]
		case r == 1:
			v[i] = float32(rng.Float64()*12 - 6)
		default:
			v[i] = float32(rng.NormFloat64() * 2)
		}
	}
	return tensors.FromFlatDataAndDimensions(v, dims...)
}
