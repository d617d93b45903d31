// Package linear is lesson 1: a linear projection with the weight in PyTorch's layout.
//
// Read README.md, replace the TODO below with your code, then run `mhalab lessons check 1`.
package linear

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// Linear applies a linear map to the last axis of x, with the weight stored as PyTorch's
// nn.Linear stores it:
//
//	y = x·Wᵀ + b        y[..., o] = Σ_i x[..., i]·W[o, i] + b[o]
//
// x: [..., in]   weight W: [out, in]   bias b: [out], or nil for no bias   →   y: [..., out]
func Linear(x, weight, bias *Node) *Node {
	// TODO: compute y = x·Wᵀ + b. The weight is [out, in], not [in, out], and bias may be nil.
	return x
}
