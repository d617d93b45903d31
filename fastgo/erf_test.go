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
// clamp 4, tiny and subnormal values; mixedInput).
func erfInput(rng *rand.Rand, c int) *tensors.Tensor {
	return mixedInput(rng, c, 2, 6, 1, -1, math.Nextafter32(1, 0), math.Nextafter32(1, 2), 4, -4, 3.9192, 1e-8, -1e-8, 1e-40, -1e-45, 0.5, -0.5)
}
