package fastgo_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/fastgo"
)

// TestConcatenateMatchesGoMLX: Concatenate of 1–4 random inputs (rank 1–4, any axis, sizes
// along it from 1, several dtypes; the first case large enough to run on several goroutines)
// equals GoMLX's bit for bit.
func TestConcatenateMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 11))
	var calls int64
	for c := range testCases(60) {
		dims := randomDims(rng, 1+rng.IntN(4))
		axis := rng.IntN(len(dims))
		dtype := []dtypes.DType{dtypes.Float32, dtypes.Float64, dtypes.Int32}[rng.IntN(3)]
		if c == 0 { // large enough to be cut over goroutines: flashrows' outputs, [B·h, rows, dv]
			dims, axis, dtype = []int{16, 40, 64}, 1, dtypes.Float32
		}
		parts := make([]*tensors.Tensor, 1+rng.IntN(4))
		for i := range parts {
			d := slices.Clone(dims)
			d[axis] = 1 + rng.IntN(5)
			parts[i] = randomInput(rng, dtype, d, true)
		}
		fast, gomlx, k := execBoth(t, backend, backends.OpTypeConcatenate, func(in []*Node) *Node { return Concatenate(in, axis) }, parts...)
		calls += k
		sameBits(t, fmt.Sprintf("case %d: Concatenate(%d × %s…, axis %d)", c, len(parts), parts[0].Shape(), axis), fast, gomlx)
	}
	if calls == 0 {
		t.Fatalf("fastgo's Concatenate never ran: the executor is not installed (%s)", fastgo.Status())
	}
}
