package fastgo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/fastgo"
)

// TestLogisticMatchesGoMLX: Logistic (SiLU's sigmoid) over −110 … 110 with special values, and
// float64. GoMLX computes in float64 with math.Exp and rounds once to float32; fastgo's float32
// loop uses the same formula with its vector float64 exp, so it may differ only where the two
// float64 values round to neighbouring float32s: by 1 ulp, in at most 1 element per 10⁴
// (measured: none). float64 is GoMLX's own code, equal bit for bit.
func TestLogisticMatchesGoMLX(t *testing.T) { eachVec(t, testLogisticMatchesGoMLX) }

func testLogisticMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 9))
	var calls int64
	total, off := 0, 0
	for c := range testCases(40) {
		x := logisticInput(rng, c)
		v := tensors.MustCopyFlatData[float32](x)
		dims := x.Shape().Dimensions
		fast, gomlx, k := execBoth(t, backend, backends.OpTypeLogistic, func(in []*Node) *Node { return Logistic(in[0]) }, x)
		calls += k
		fb, gb := bits(fast), bits(gomlx)
		for i := range fb {
			total++
			if fb[i] == gb[i] {
				continue
			}
			f, g := math.Float32frombits(uint32(fb[i])), math.Float32frombits(uint32(gb[i]))
			if f != f || g != g || math.Nextafter32(g, f) != f {
				t.Fatalf("case %d: logistic(%g) = %g (bits %#x), GoMLX %g (bits %#x)", c, v[i], f, fb[i], g, gb[i])
			}
			off++
		}
		x64 := randomInput(rng, dtypes.Float64, dims, true)
		fast, gomlx, k = execBoth(t, backend, backends.OpTypeLogistic, func(in []*Node) *Node { return Logistic(in[0]) }, x64)
		calls += k
		sameBits(t, fmt.Sprintf("case %d float64 %s", c, x64.Shape()), fast, gomlx)
	}
	if calls == 0 {
		t.Fatalf("fastgo's Logistic never ran: the executor is not installed (%s)", fastgo.Status())
	}
	t.Logf("float32: %d of %d elements 1 ulp from GoMLX's", off, total)
	if off*10000 > total {
		t.Errorf("float32: %d of %d elements differ from GoMLX's (by 1 ulp), want ≤ 1 in 10⁴", off, total)
	}
}

// logisticInput is case c's float32 input: mostly N(0, 4²) (where SiLU's inputs lie), some
// uniform over −110 … 110 (both ends saturate), some special values; every fourth case long
// enough for several goroutines.
func logisticInput(rng *rand.Rand, c int) *tensors.Tensor {
	dims := randomDims(rng, 1+rng.IntN(3))
	if c%4 == 0 {
		dims = []int{40000 + rng.IntN(3000)}
	}
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		88.72283, -88.72284, -103.97208, 17, -17, 1e-8, -1e-8}
	v := make([]float32, prodDims(dims))
	for i := range v {
		switch r := rng.IntN(40); {
		case r == 0:
			v[i] = specials[rng.IntN(len(specials))]
		case r == 1:
			v[i] = float32(rng.Float64()*220 - 110)
		default:
			v[i] = float32(rng.NormFloat64() * 4)
		}
	}
	return tensors.FromFlatDataAndDimensions(v, dims...)
}
