// Package dotgrad is the gradient of GoMLX's DotGeneral computed with DotGeneral — and the one
// place in mhalab that changes GoMLX's table of gradients (graph.VJPRegistration).
//
// GoMLX v0.26 differentiates out = DotGeneral(lhs, rhs) by broadcasting the output gradient
// against the other operand and summing: for a Linear layer x [B, L, E]·Wᵀ, W [O, E], the
// gradient of W goes through a [B, L, O, E] tensor; for attention scores q·kᵀ, the gradient of q
// through [B, h, Lq, Lk, dk]. At B = 2, L = 1024, E = 512 that is 2 GiB per product, and the
// pure-Go backend and XLA's CPU compiler both materialise it: one pre-LN block's backward pass
// grows with B·L·O·E instead of B·L·E + O·E, and the arithmetic runs as element-wise loops
// instead of matrix products (`mhalab bench` measures the memory of a stack's gradients).
//
// The chain rule needs nothing of the sort. With out = DotGeneral(lhs, rhs) and output gradient
// v (axes: batch, lhs's free axes, rhs's free axes):
//
//	∂lhs = DotGeneral(v, contracting rhs's free axes, rhs, contracting rhs's free axes)  → transposed to lhs's axes
//	∂rhs = DotGeneral(v, contracting lhs's free axes, lhs, contracting lhs's free axes)  → transposed to rhs's axes
//
// both batched over the batch axes: two matrix products of the forward's size.
//
// # Installing it is explicit
//
// GoMLX looks gradients up in one table for the whole process (graph.VJPRegistration), so this
// rule cannot be scoped to some graphs: Install registers it for every DotGeneral node of every
// graph built afterwards, on every backend, and Uninstall puts GoMLX's rule back. Importing
// this package changes nothing. Programs that differentiate large products (training, gradient
// checkpointing, `mhalab bench`) call Install once at start-up; importing
// github.com/mhalab/mhalab/fastgo calls it too. The gradients have the same values (checked
// against GoMLX's rule and finite differences), with less memory and time. The table is a
// plain map: install or uninstall before building graphs, never while another goroutine builds
// one.
//
// There are exactly two rules: GoMLX's own, saved once when this package is initialised
// (before any package that imports it can change the table), and this one. No other package
// of mhalab writes the table's DotGeneral entry (fastgo calls Install), so Uninstall always
// restores GoMLX's rule.
//
// GoMLX keeps the parameters of a DotGeneral node unexported; they are read with reflection,
// and if that ever fails (another GoMLX version) the node falls back to GoMLX's rule.
package dotgrad

import (
	"reflect"
	"slices"
	"sync"

	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// goMLXDotGeneralVJP is GoMLX's own rule, saved when this package is initialised: used when a
// node's parameters cannot be read, and restored by Uninstall.
var goMLXDotGeneralVJP = VJPRegistration[NodeTypeDotGeneral]

var (
	dotGradMu        sync.Mutex
	dotGradInstalled bool
)

// Install registers this package's gradient of DotGeneral (two matrix products, see
// above) in GoMLX's process-wide table of gradients, for graphs built afterwards. Calling it
// again does nothing. Call it before building graphs, not concurrently with graph building.
func Install() {
	dotGradMu.Lock()
	defer dotGradMu.Unlock()
	VJPRegistration[NodeTypeDotGeneral] = dotGeneralVJP
	dotGradInstalled = true
}

// Uninstall restores GoMLX's own gradient of DotGeneral (the one registered when this package
// was initialised), for graphs built afterwards. Calling it when the rule is not
// installed does nothing.
func Uninstall() {
	dotGradMu.Lock()
	defer dotGradMu.Unlock()
	if dotGradInstalled {
		VJPRegistration[NodeTypeDotGeneral] = goMLXDotGeneralVJP
		dotGradInstalled = false
	}
}

// Installed reports whether Install's rule is in effect.
func Installed() bool {
	dotGradMu.Lock()
	defer dotGradMu.Unlock()
	return dotGradInstalled
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
