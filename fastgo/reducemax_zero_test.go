package fastgo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// TestReduceMaxZeroRows: long float32 rows whose maximum is ±0 (non-positive values with +0,
// −0 or both among them, or all −0: a masked softmax's logits over a cache of zeros) reduce to
// GoMLX's maximum bit for bit (+0 above −0).
func TestReduceMaxZeroRows(t *testing.T) { eachVec(t, testReduceMaxZeroRows) }

func testReduceMaxZeroRows(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(7, 29))
	negZero := float32(math.Copysign(0, -1))
	for c, zeros := range [][]float32{{0}, {negZero}, {0, negZero}, {negZero, 0}, nil} {
		const rows, n = 5, 4096
		v := make([]float32, rows*n)
		for i := range v {
			v[i] = -float32(rng.Float64()*3) - 0.5
			if zeros == nil {
				v[i] = negZero
			}
		}
		for r := range rows {
			for _, z := range zeros {
				v[r*n+rng.IntN(n)] = z
			}
		}
		x := tensors.FromFlatDataAndDimensions(v, rows, n)
		fast, gomlx, _ := execBoth(t, backend, backends.OpTypeReduceMax, func(in []*Node) *Node { return ReduceMax(in[0], 1) }, x)
		sameBits(t, fmt.Sprintf("case %d (zeros %v)", c, zeros), fast, gomlx)
	}
}
