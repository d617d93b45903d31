package fastgo

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// GoMLX v0.26's gradient of DotGeneral (graph.dotGeneralVJP) is not a DotGeneral: it multiplies
// the broadcast output gradient by the other operand and reduce-sums, materialising a
// [batch, lhsCross, rhsCross, contract] tensor. On the pure-Go backend that is both the slowest
// part of a backward pass and a memory spike. This package replaces the entry of
// graph.VJPRegistration (exported, and documented as changeable) with one that writes each
// gradient as one DotGeneral plus a transpose — for graphs on the pure-Go backend only; on any
// other backend, and for other dtypes or with the fast path off, the original VJP runs.

var gomlxDotGeneralVJP VJP

func init() {
	gomlxDotGeneralVJP = VJPRegistration[NodeTypeDotGeneral]
	VJPRegistration[NodeTypeDotGeneral] = dotGeneralVJP
}

// dotGeneralVJP: for out = DotGeneral(lhs, lc, lb, rhs, rc, rb), out: [batch…, lhsCross…, rhsCross…],
//
//	dlhs = DotGeneral(v, rhsCross axes of v, batch axes of v; rhs, rhsCross, rb) → [batch…, lhsCross…, rhs contracting…]
//	drhs = DotGeneral(v, lhsCross axes of v, batch axes of v; lhs, lhsCross, lb) → [batch…, rhsCross…, lhs contracting…]
//
// each transposed back to its operand's axis order.
func dotGeneralVJP(node *Node, vjpOutputs []*Node, outputShape shapes.Shape) []*Node {
	if !enabled.Load() || !onPureGo(node) || (node.DType() != dtypes.Float32 && node.DType() != dtypes.Float64) {
		return gomlxDotGeneralVJP(node, vjpOutputs, outputShape)
	}
	lc, lb, rc, rb, err := dotGeneralAxes(node)
	if err != nil {
		return gomlxDotGeneralVJP(node, vjpOutputs, outputShape)
	}
	v := vjpOutputs[0]
	in := node.Inputs()
	lhs, rhs := in[0], in[1]
	lx, rx := crossAxes(lhs.Rank(), lc, lb), crossAxes(rhs.Rank(), rc, rb)
	nb, nl, nr := len(lb), len(lx), len(rx)
	vBatch := axisRange(0, nb)
	dLhs := DotGeneral(v, axisRange(nb+nl, nr), vBatch, rhs, rx, rb) // [batch…, lhsCross…, sorted(rc)…]
	dRhs := DotGeneral(v, axisRange(nb, nl), vBatch, lhs, lx, lb)    // [batch…, rhsCross…, sorted(lc)…]
	dLhs = TransposeAllAxes(dLhs, backPermutation(lhs.Rank(), lb, lx, lc, rc, nb+nl)...)
	dRhs = TransposeAllAxes(dRhs, backPermutation(rhs.Rank(), rb, rx, rc, lc, nb+nr)...)
	return []*Node{dLhs, dRhs}
}

// backPermutation: the permutation that takes a gradient laid out as [batch…, cross…, other
// operand's contracting axes in increasing order…] back to this operand's axis order.
// Contracting axis this[i] pairs with other[i].
func backPermutation(rank int, batch, cross, this, other []int, contractStart int) []int {
	perm := make([]int, rank)
	for i, a := range batch {
		perm[a] = i
	}
	for i, a := range cross {
		perm[a] = len(batch) + i
	}
	sorted := slices.Sorted(slices.Values(other))
	for i, a := range this {
		perm[a] = contractStart + slices.Index(sorted, other[i])
	}
	return perm
}

// crossAxes: the axes of a rank-r operand that are neither contracting nor batch, increasing.
func crossAxes(rank int, contracting, batch []int) []int {
	var out []int
	for a := range rank {
		if !slices.Contains(contracting, a) && !slices.Contains(batch, a) {
			out = append(out, a)
		}
	}
	return out
}

func axisRange(start, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = start + i
	}
	return out
}

func onPureGo(node *Node) bool {
	_, ok := node.Graph().Backend().(*simplego.Backend)
	return ok
}

// dotGeneralAxes reads the axes of a DotGeneral node (graph's unexported nodeInputsDotGeneral)
// through reflection, normalised to non-negative axes.
func dotGeneralAxes(node *Node) (lc, lb, rc, rb []int, err error) {
	f := reflect.ValueOf(node).Elem().FieldByName("inputs")
	if !f.IsValid() || f.Kind() != reflect.Interface || f.IsNil() {
		return nil, nil, nil, nil, fmt.Errorf("fastgo: graph.Node has no inputs field")
	}
	v := f.Elem()
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, nil, nil, nil, fmt.Errorf("fastgo: DotGeneral inputs are %s", v.Type())
	}
	in := node.Inputs()
	read := func(name string, rank int) ([]int, error) {
		s := v.FieldByName(name)
		if !s.IsValid() || s.Kind() != reflect.Slice || s.Type().Elem().Kind() != reflect.Int {
			return nil, fmt.Errorf("fastgo: nodeInputsDotGeneral.%s is not an []int", name)
		}
		out := make([]int, s.Len())
		for i := range out {
			out[i] = int(s.Index(i).Int())
			if out[i] < 0 {
				out[i] += rank
			}
		}
		return out, nil
	}
	if lc, err = read("lhsContractingAxes", in[0].Rank()); err != nil {
		return
	}
	if lb, err = read("lhsBatchAxes", in[0].Rank()); err != nil {
		return
	}
	if rc, err = read("rhsContractingAxes", in[1].Rank()); err != nil {
		return
	}
	rb, err = read("rhsBatchAxes", in[1].Rank())
	return
}
