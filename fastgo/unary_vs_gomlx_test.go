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

// unaryVsGoMLX runs the unary op opType (fn builds it) through fastgo's executor and GoMLX's on
// testCases(40) float32 inputs drawn by input, and on float64 inputs of the same shapes, and
// fails at the first element that differs more than it may: float64 must give GoMLX's bits;
// float32 GoMLX's bits, or with ulp1 their neighbour (1 ulp) in at most 1 element per 10⁴
// (logged). A NaN for a NaN always passes. It also fails when fastgo's executor never ran.
func unaryVsGoMLX(t *testing.T, opType backends.OpType, fn func(x *Node) *Node, stream uint64, input func(rng *rand.Rand, c int) *tensors.Tensor, ulp1 bool) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), stream))
	graphFn := func(in []*Node) *Node { return fn(in[0]) }
	var calls int64
	total, off := 0, 0
	for c := range testCases(40) {
		x := input(rng, c)
		v := tensors.MustCopyFlatData[float32](x)
		fast, gomlx, k := execBoth(t, backend, opType, graphFn, x)
		calls += k
		fb, gb := bits(fast), bits(gomlx)
		for i := range fb {
			total++
			f, g := math.Float32frombits(uint32(fb[i])), math.Float32frombits(uint32(gb[i]))
			if fb[i] == gb[i] || (f != f && g != g) {
				continue
			}
			if !ulp1 || f != f || g != g || math.Nextafter32(g, f) != f {
				t.Fatalf("case %d: %s(%g) = %g (bits %#x), GoMLX %g (bits %#x)", c, opType, v[i], f, fb[i], g, gb[i])
			}
			off++
		}
		x64 := randomInput(rng, dtypes.Float64, x.Shape().Dimensions, true)
		fast, gomlx, k = execBoth(t, backend, opType, graphFn, x64)
		calls += k
		sameBits(t, fmt.Sprintf("case %d float64 %s", c, x64.Shape()), fast, gomlx)
	}
	if calls == 0 {
		t.Fatalf("fastgo's %s never ran: the executor is not installed (%s)", opType, fastgo.Status())
	}
	if ulp1 {
		t.Logf("float32: %d of %d elements 1 ulp from GoMLX's", off, total)
	}
	if off*10000 > total {
		t.Errorf("float32: %d of %d elements differ from GoMLX's (by 1 ulp), want ≤ 1 in 10⁴", off, total)
	}
}

// mixedInput is case c's float32 input for a unary op: of every 40 values about 38 from
// N(0, sigma²), one uniform over −half … half, one from ±0, ±Inf, NaN and specials; the shape
// random, every fourth case long enough for several goroutines.
func mixedInput(rng *rand.Rand, c int, sigma, half float64, specials ...float32) *tensors.Tensor {
	dims := randomDims(rng, 1+rng.IntN(3))
	if c%4 == 0 {
		dims = []int{40000 + rng.IntN(3000)}
	}
	specials = append([]float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}, specials...)
	v := make([]float32, prodDims(dims))
	for i := range v {
		switch r := rng.IntN(40); {
		case r == 0:
			v[i] = specials[rng.IntN(len(specials))]
		case r == 1:
			v[i] = float32((2*rng.Float64() - 1) * half)
		default:
			v[i] = float32(rng.NormFloat64() * sigma)
		}
	}
	return tensors.FromFlatDataAndDimensions(v, dims...)
}
