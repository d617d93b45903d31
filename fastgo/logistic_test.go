package fastgo_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// TestLogisticMatchesGoMLX: Logistic (SiLU's sigmoid) over −110 … 110 with special values, and
// float64. GoMLX computes in float64 with math.Exp and rounds once to float32; fastgo's float32
// loop uses the same formula with its vector float64 exp, so it may differ only where the two
// float64 values round to neighbouring float32s: by 1 ulp, in at most 1 element per 10⁴
// (measured: none). float64 is GoMLX's own code, equal bit for bit.
func TestLogisticMatchesGoMLX(t *testing.T) {
	eachVec(t, func(t *testing.T) { unaryVsGoMLX(t, backends.OpTypeLogistic, Logistic, 9, logisticInput, true) })
}

// logisticInput is case c's float32 input: mostly N(0, 4²) (where SiLU's inputs lie), some
// uniform over −110 … 110 (both ends saturate), some special values (mixedInput).
func logisticInput(rng *rand.Rand, c int) *tensors.Tensor {
	return mixedInput(rng, c, 4, 110, 88.72283, -88.72284, -103.97208, 17, -17, 1e-8, -1e-8)
}
