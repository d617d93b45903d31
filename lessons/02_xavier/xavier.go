// Package xavier is lesson 2: Xavier (Glorot) uniform initialisation.
//
// Read README.md, replace the TODOs below with your code, then run `mhalab lessons check 2`.
package xavier

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// XavierBound is the bound a of Xavier-uniform initialisation, U(−a, a):
//
//	a = √(6 / (fanIn + fanOut))
func XavierBound(fanIn, fanOut int) float64 {
	// TODO: return the bound.
	return 0
}

// XavierUniform draws a weight in PyTorch's layout, [fanOut, fanIn], from U(−a, a) with
// a = XavierBound(fanIn, fanOut).
//
// rngState is GoMLX's random-number state (shape graph.RNGStateShape); return the state after
// drawing, so that the next draw differs. weight: [fanOut, fanIn], float32.
func XavierUniform(rngState *Node, fanOut, fanIn int) (newRNGState, weight *Node) {
	// TODO: draw uniform values and map them onto (−a, a).
	return rngState, Zeros(rngState.Graph(), shapes.Make(dtypes.Float32, fanOut, fanIn))
}
