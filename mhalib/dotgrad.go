package mhalib

import (
	"reflect"
	"slices"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// The gradient of DotGeneral, computed with DotGeneral.
//
// GoMLX v0.26 differentiates out = DotGeneral(lhs, rhs) by broadcasting the output gradient
// against the other operand and summing: for a Linear layer x [B, L, E]·Wᵀ, W [O, E], the
// gradient of W goes through a [B, L, O, E] tensor; for attention scores q·kᵀ, the gradient of q
// through [B, h, Lq, Lk, dk]. At B = 2, L = 1024, E = 512 that is 2 GiB per product, and the
// pure-Go backend and XLA's CPU compiler both materialise it: one pre-LN block's backward pass
// needed 12 GiB, eight blocks 16–19 GiB on the pure-Go backend, and the arithmetic runs as
// element-wise loops instead of matrix products.
//
// The chain rule needs nothing of the sort. With out = DotGeneral(lhs, rhs) and output gradient
// v (axes: batch, lhs's free axes, rhs's free axes):
//
//	∂lhs = DotGeneral(v, contracting rhs's free axes, rhs, contracting rhs's free axes)  → transposed to lhs's axes
//	∂rhs = DotGeneral(v, contracting lhs's free axes, lhs, contracting lhs's free axes)  → transposed to rhs's axes
//
// both batched over the batch axes: two matrix products of the forward's size. mhalib
// registers this VJP for every DotGeneral node (graph.VJPRegistration, GoMLX's extension point
// for gradients), which changes gradients in the whole program, for the better: the same
// values (checked against GoMLX's own rule and finite differences), less memory, less time.
// GoMLX keeps the parameters of a DotGeneral node unexported; they are read with reflection,
// and if that ever fails (another GoMLX version) the original rule is used.

// goMLXDotGeneralVJP is GoMLX's own rule, used when a node's parameters cannot be read.
var goMLXDotGeneralVJP = VJPRegistration[NodeTypeDotGeneral]

func init() {
	VJPRegistration[NodeTypeDotGeneral] = dotGeneralVJP
}

// dotGeneralAxes are the parameters of a DotGeneral node.
type dotGeneralAxes struct {
	lhsContracting, lhsBatch, rhsContracting, rhsBatch []int
}

// readDotGeneralAxes reads the axes of a DotGeneral node (unexported in GoMLX) by reflection.
func readDotGeneralAxes(node *Node) (axes dotGeneralAxes, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	inputs := reflect.ValueOf(node).Elem().FieldByName("inputs")
	if !inputs.IsValid() || inputs.Kind() != reflect.Interface || inputs.IsNil() {
		return axes, false
	}
	params := inputs.Elem()
	if params.Kind() == reflect.Pointer {
		params = params.Elem()
	}
	if params.Kind() != reflect.Struct {
		return axes, false
	}
	ints := func(name string) ([]int, bool) {
		f := params.FieldByName(name)
		if !f.IsValid() || f.Kind() != reflect.Slice {
			return nil, false
		}
		out := make([]int, f.Len())
		for i := range out {
			out[i] = int(f.Index(i).Int())
		}
		return out, true
	}
	var ok1, ok2, ok3, ok4 bool
	axes.lhsContracting, ok1 = ints("lhsContractingAxes")
	axes.lhsBatch, ok2 = ints("lhsBatchAxes")
	axes.rhsContracting, ok3 = ints("rhsContractingAxes")
	axes.rhsBatch, ok4 = ints("rhsBatchAxes")
	return axes, ok1 && ok2 && ok3 && ok4
}

// freeAxes returns the axes of a rank-r operand that are neither contracted nor batch, in
// increasing order: the order DotGeneral puts them in its output.
func freeAxes(rank int, contracting, batch []int) []int {
	var free []int
	for a := range rank {
		if !slices.Contains(contracting, a) && !slices.Contains(batch, a) {
			free = append(free, a)
		}
	}
	return free
}

func axisRange(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// dotGeneralVJP returns the gradients of lhs and rhs of the DotGeneral node for the output
// gradient vjps[0] (see the description above).
func dotGeneralVJP(node *Node, vjps []*Node, outputShape shapes.Shape) []*Node {
	p, ok := readDotGeneralAxes(node)
	inputs := node.Inputs()
	if !ok || len(inputs) != 2 {
		return goMLXDotGeneralVJP(node, vjps, outputShape)
	}
	lhs, rhs, v := inputs[0], inputs[1], vjps[0]
	lhsFree := freeAxes(lhs.Rank(), p.lhsContracting, p.lhsBatch)
	rhsFree := freeAxes(rhs.Rank(), p.rhsContracting, p.rhsBatch)
	nb, nl, nr := len(p.lhsBatch), len(lhsFree), len(rhsFree)
	vBatch, vLhs, vRhs := axisRange(0, nb), axisRange(nb, nl), axisRange(nb+nl, nr) // v: [batch, lhs free, rhs free]
	return []*Node{
		gradOperand(v, vRhs, vBatch, rhs, rhsFree, p.rhsBatch, lhs.Rank(), p.lhsBatch, lhsFree, p.lhsContracting, p.rhsContracting),
		gradOperand(v, vLhs, vBatch, lhs, lhsFree, p.lhsBatch, rhs.Rank(), p.rhsBatch, rhsFree, p.rhsContracting, p.lhsContracting),
	}
}

// gradOperand computes the gradient of one operand ("this") of a DotGeneral from the output
// gradient v and the other operand:
//
//	g = DotGeneral(v, vContract, vBatch, other, otherFree, otherBatch)   [batch, this free, other's contracted axes sorted]
//
// then transposes g to this operand's axes: its batch axes from g's batch axes, its free axes
// from g's next axes, and its contracted axis thisContracting[k] from the position of
// otherContracting[k] among the sorted contracted axes of other.
func gradOperand(v *Node, vContract, vBatch []int, other *Node, otherFree, otherBatch []int,
	thisRank int, thisBatch, thisFree, thisContracting, otherContracting []int) *Node {
	g := DotGeneral(v, vContract, vBatch, other, otherFree, otherBatch)
	nb, nf := len(thisBatch), len(thisFree)
	sortedOther := slices.Sorted(slices.Values(otherContracting))
	perm := make([]int, thisRank)
	for i, a := range thisBatch {
		perm[a] = i
	}
	for j, a := range thisFree {
		perm[a] = nb + j
	}
	for k, a := range thisContracting {
		perm[a] = nb + nf + slices.Index(sortedOther, otherContracting[k])
	}
	if slices.Equal(perm, axisRange(0, thisRank)) {
		return g
	}
	return TransposeAllDims(g, perm...)
}
