//go:build solution

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
	// Contract the last axis of x ("in") with axis 1 of the weight ("in"): [..., in] · [out, in] → [..., out].
	y := DotGeneral(x, []int{x.Rank() - 1}, nil, weight, []int{1}, nil)
	if bias != nil {
		y = Add(y, ExpandLeftToRank(bias, y.Rank())) // [..., out] + [1, …, 1, out]
	}
	return y
}
