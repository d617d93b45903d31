//go:build solution

package xavier

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// XavierBound is the bound a of Xavier-uniform initialisation, U(−a, a):
//
//	a = √(6 / (fanIn + fanOut))
func XavierBound(fanIn, fanOut int) float64 {
	return math.Sqrt(6 / float64(fanIn+fanOut))
}

// XavierUniform draws a weight in PyTorch's layout, [fanOut, fanIn], from U(−a, a) with
// a = XavierBound(fanIn, fanOut).
//
// rngState is GoMLX's random-number state (shape graph.RNGStateShape); return the state after
// drawing, so that the next draw differs. weight: [fanOut, fanIn], float32.
func XavierUniform(rngState *Node, fanOut, fanIn int) (newRNGState, weight *Node) {
	a := XavierBound(fanIn, fanOut)
	newRNGState, u := RandomUniform(rngState, shapes.Make(dtypes.Float32, fanOut, fanIn)) // u ∈ [0, 1)
	weight = MulScalar(AddScalar(MulScalar(u, 2), -1), a)                                 // 2u − 1 ∈ [−1, 1), times a
	return newRNGState, weight
}
