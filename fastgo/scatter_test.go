package fastgo_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/fastgo"
)

// TestScatterRowsMatchesGoMLX: ScatterMax, ScatterMin and ScatterSum of whole rows (indices
// [N, K] into the first K axes of a float32 operand, repeated indices, ±0, ±Inf and NaN in the
// values) equal GoMLX's bit for bit, with the operand a parameter (copied) and an intermediate
// result (handed over, updated in place).
func TestScatterRowsMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 11))
	ops := []struct {
		op backends.OpType
		fn func(x, i, u *Node, sorted, unique bool) *Node
	}{{backends.OpTypeScatterMax, ScatterMax}, {backends.OpTypeScatterMin, ScatterMin}, {backends.OpTypeScatterSum, ScatterSum}}
	calls := map[backends.OpType]int64{}
	for c := range testCases(60) {
		dims := randomDims(rng, 1+rng.IntN(4))
		k := 1 + rng.IntN(len(dims))
		n := 1 + rng.IntN(6)
		idx := make([]int32, n*k)
		for r := range n {
			for a := range k {
				idx[r*k+a] = int32(rng.IntN(dims[a]))
			}
		}
		if n > 1 && rng.IntN(2) == 0 {
			copy(idx[k:2*k], idx[:k]) // a repeated row
		}
		updDims := append([]int{n}, dims[k:]...)
		x := randomInput(rng, dtypes.Float32, dims, true)
		u := randomInput(rng, dtypes.Float32, updDims, true)
		it := tensors.FromFlatDataAndDimensions(idx, n, k)
		o := ops[c%3]
		for _, owned := range []bool{false, true} {
			fast, gomlx, calls1 := execBoth(t, backend, o.op, func(in []*Node) *Node {
				operand := in[0]
				if owned {
					operand = Neg(Neg(operand)) // an intermediate, handed over to the scatter
				}
				return o.fn(operand, in[1], in[2], false, false)
			}, x, it, u)
			calls[o.op] += calls1
			sameBits(t, fmt.Sprintf("case %d: %s(%s, indices %v, updates %s), owned %v", c, o.op, x.Shape(), idx, u.Shape(), owned), fast, gomlx)
		}
	}
	for _, o := range ops {
		if calls[o.op] == 0 {
			t.Fatalf("fastgo's %s never ran: the executor is not installed (%s)", o.op, fastgo.Status())
		}
	}
}
