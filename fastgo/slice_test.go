package fastgo_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"

	"github.com/mhalab/mhalab/fastgo"
)

// TestSliceMatchesGoMLX: Slice of random blocks (rank 1–4, whole axes, single elements, several
// dtypes) equals GoMLX's bit for bit; slices with a stride of 2 go to GoMLX's executor.
func TestSliceMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 10))
	var calls int64
	for c := range testCases(60) {
		dims := randomDims(rng, 1+rng.IntN(4))
		dtype := []dtypes.DType{dtypes.Float32, dtypes.Float64, dtypes.Int32}[rng.IntN(3)]
		x := randomInput(rng, dtype, dims, true)
		specs := make([]SliceAxisSpec, len(dims))
		for a, d := range dims {
			lo, hi := 0, d
			switch rng.IntN(3) {
			case 0: // whole axis
			case 1:
				lo = rng.IntN(d)
				hi = lo + 1 + rng.IntN(d-lo)
			default:
				lo = rng.IntN(d)
				hi = lo + 1
			}
			specs[a] = AxisRange(lo, hi)
			if c%5 == 4 && hi-lo > 1 {
				specs[a] = specs[a].Stride(2)
			}
		}
		fast, gomlx, k := execBoth(t, backend, backends.OpTypeSlice, func(in []*Node) *Node { return Slice(in[0], specs...) }, x)
		calls += k
		sameBits(t, fmt.Sprintf("case %d: Slice(%s, %v)", c, x.Shape(), specs), fast, gomlx)
	}
	if calls == 0 {
		t.Fatalf("fastgo's Slice never ran: the executor is not installed (%s)", fastgo.Status())
	}
}
