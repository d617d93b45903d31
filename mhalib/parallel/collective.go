package parallel

import (
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/distributed"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified
)

// AllReduceSum sums x over every device of the graph's mesh (the SPMD strategy); in a graph on
// one device it returns x. x: any shape → the same shape, equal on every device.
func AllReduceSum(x *Node) *Node { return allReduce(x, backends.ReduceOpSum) }

// AllReduceMax is AllReduceSum with the maximum.
func AllReduceMax(x *Node) *Node { return allReduce(x, backends.ReduceOpMax) }

func allReduce(x *Node, op backends.ReduceOpType) *Node {
	g := x.Graph()
	if g.DistributedStrategy() != distributed.SPMD || g.NumDevices() <= 1 {
		return x
	}
	return g.Distributed().AllReduceOne(x, op)
}

// Devices is the number of devices the graph of x runs on (1 when it is not distributed).
func Devices(x *Node) int { return max(1, x.Graph().NumDevices()) }

// vjpOfPartials returns ∂⟨y, dy⟩/∂wrt where y was computed from reduced[i] = AllReduceSum(partials[i])
// (see the package doc, "Gradients through collectives"): first dr_i = ∂⟨y, dy⟩/∂reduced[i]
// (replicated), then the device's own ∂Σ_i⟨partials[i], dr_i⟩/∂wrt. Inputs that every device
// holds whole still need an AllReduceSum of their result.
func vjpOfPartials(y, dy *Node, partials, reduced []*Node, wrt ...*Node) []*Node {
	dReduced := Gradient(ReduceAllSum(Mul(y, StopGradient(dy))), reduced...)
	var local *Node
	for i, p := range partials {
		term := ReduceAllSum(Mul(p, StopGradient(dReduced[i])))
		if local == nil {
			local = term
		} else {
			local = Add(local, term)
		}
	}
	return Gradient(local, wrt...)
}
