// Package inspect checks attention and training on host tensors, for notebooks and tests:
// attention rows sum to one (CheckRowsSumToOne, AttentionRowStats), heads differ from each other
// (HeadDiversity), gradients are finite (VariableGradients, GradientReport, CheckGradients), and
// where a NaN or Inf first appears (FirstNonFinite, FirstNaN, NonFinite). Errors are
// *mhalib.ArgumentError values naming the argument.
package inspect

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// float64s returns the elements of a float tensor as float64.
func float64s(t *tensors.Tensor, arg string) ([]float64, error) {
	if t == nil {
		return nil, &mhalib.ArgumentError{Arg: arg, Msg: "nil tensor"}
	}
	switch t.DType() {
	case dtypes.Float64:
		return tensors.CopyFlatData[float64](t)
	case dtypes.Float32:
		f32, err := tensors.CopyFlatData[float32](t)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(f32))
		for i, v := range f32 {
			out[i] = float64(v)
		}
		return out, nil
	}
	return nil, &mhalib.ArgumentError{Arg: arg, Msg: fmt.Sprintf("shape %s: want Float32 or Float64", t.Shape())}
}

// RowStats summarises the rows (last axis) of attention weights.
type RowStats struct {
	Rows        int     // number of rows
	FullyMasked int     // rows that are all zero (every key blocked)
	MaxDev      float64 // max |Σ_j w_j − 1| over the other rows
	Negative    int     // entries < 0
	NonFinite   int     // NaN or ±Inf entries
}

// AttentionRowStats computes RowStats of weights [..., Lk].
func AttentionRowStats(weights *tensors.Tensor) (RowStats, error) {
	data, err := float64s(weights, "weights")
	if err != nil {
		return RowStats{}, err
	}
	var st RowStats
	if weights.Rank() == 0 {
		return st, &mhalib.ArgumentError{Arg: "weights", Msg: fmt.Sprintf("shape %s: want [..., Lk]", weights.Shape())}
	}
	lk := weights.Shape().Dim(-1)
	if lk == 0 {
		return st, nil
	}
	for r := 0; r < len(data)/lk; r++ {
		row := data[r*lk : (r+1)*lk]
		st.Rows++
		sum, zero := 0.0, true
		for _, w := range row {
			switch {
			case math.IsNaN(w) || math.IsInf(w, 0):
				st.NonFinite++
			case w < 0:
				st.Negative++
			}
			sum += w
			zero = zero && w == 0
		}
		if zero {
			st.FullyMasked++
			continue
		}
		st.MaxDev = math.Max(st.MaxDev, math.Abs(sum-1))
		if math.IsNaN(sum) {
			st.MaxDev = math.NaN()
		}
	}
	return st, nil
}

// CheckRowsSumToOne checks that every row (last axis) of attention weights [..., Lk] sums to 1
// within tol, with no negative, NaN or Inf entry. All-zero rows (queries whose every key is
// masked) are allowed and counted in the error message when something else fails.
func CheckRowsSumToOne(weights *tensors.Tensor, tol float64) error {
	st, err := AttentionRowStats(weights)
	if err != nil {
		return err
	}
	if st.NonFinite > 0 || st.Negative > 0 || !(st.MaxDev <= tol) {
		return fmt.Errorf("mhalib: weights shape %s: %d rows (%d fully masked): max |Σw − 1| = %.3g > tol %g, %d negative, %d NaN/Inf entries",
			weights.Shape(), st.Rows, st.FullyMasked, st.MaxDev, tol, st.Negative, st.NonFinite)
	}
	return nil
}

// HeadDiversity returns the mean pairwise Jensen–Shannon divergence (natural log, in [0, ln 2])
// between the attention distributions of different heads, averaged over head pairs, batch and
// query rows. weights: [B, h, Lq, Lk]. 0 means every head attends identically. Rows that are all
// zero in either head are skipped; fewer than two heads give 0; a tensor that is not a float
// [B, h, Lq, Lk] gives NaN.
func HeadDiversity(weights *tensors.Tensor) float64 {
	data, err := float64s(weights, "weights")
	if err != nil || weights.Rank() != 4 {
		return math.NaN()
	}
	d := weights.Shape().Dimensions
	B, h, lq, lk := d[0], d[1], d[2], d[3]
	if h < 2 {
		return 0
	}
	row := func(b, n, i int) []float64 {
		off := ((b*h+n)*lq + i) * lk
		return data[off : off+lk]
	}
	total, count := 0.0, 0
	for b := range B {
		for i := range lq {
			for n := range h {
				for m := n + 1; m < h; m++ {
					p, q := row(b, n, i), row(b, m, i)
					if allZero(p) || allZero(q) {
						continue
					}
					total += jensenShannon(p, q)
					count++
				}
			}
		}
	}
	if count == 0 {
		return 0
	}
	return total / float64(count)
}

func allZero(xs []float64) bool {
	for _, x := range xs {
		if x != 0 {
			return false
		}
	}
	return true
}

// jensenShannon is JSD(p‖q) = ½ KL(p‖m) + ½ KL(q‖m), m = ½(p+q), natural log.
func jensenShannon(p, q []float64) float64 {
	kl := func(a, m float64) float64 {
		if a <= 0 {
			return 0
		}
		return a * math.Log(a/m)
	}
	jsd := 0.0
	for j := range p {
		m := (p[j] + q[j]) / 2
		jsd += kl(p[j], m)/2 + kl(q[j], m)/2
	}
	return jsd
}

// GradStat summarises the gradient of one parameter.
type GradStat struct {
	Name   string  // variable (scope/name) or input name
	MaxAbs float64 // max |g| over the finite entries
	Finite bool    // every entry finite (no NaN, no ±Inf)
}

// GradientReport returns one GradStat per gradient, sorted by name.
// Tensors that are not Float32/Float64 are reported with MaxAbs NaN and Finite false.
func GradientReport(grads map[string]*tensors.Tensor) []GradStat {
	var out []GradStat
	for name, t := range grads {
		st := GradStat{Name: name, Finite: true}
		data, err := float64s(t, name)
		if err != nil {
			st.MaxAbs, st.Finite = math.NaN(), false
		}
		for _, g := range data {
			if math.IsNaN(g) || math.IsInf(g, 0) {
				st.Finite = false
				continue
			}
			st.MaxAbs = math.Max(st.MaxAbs, math.Abs(g))
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b GradStat) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// CheckGradients returns an error naming every gradient with a NaN or Inf entry.
func CheckGradients(grads map[string]*tensors.Tensor) error {
	var bad []string
	for _, st := range GradientReport(grads) {
		if !st.Finite {
			bad = append(bad, st.Name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("mhalib: non-finite gradients for %s", strings.Join(bad, ", "))
	}
	return nil
}

// NonFiniteNode describes the first node, in graph creation order, whose value holds a NaN or ±Inf.
type NonFiniteNode struct {
	ID    int    // node id in the graph
	Node  string // the node's op, inputs and shape
	Trace string // where the node was created (stack trace)
}

// String prints the node and where it was created.
func (n *NonFiniteNode) String() string {
	return fmt.Sprintf("node #%d %s\n%s", n.ID, n.Node, n.Trace)
}

// FirstNonFinite runs fn (a context graph function, as for context.NewExec) on args with an
// extra check on every floating-point node, and returns the first node, in creation order —
// that is, in the order the computation was written — whose value has a NaN or ±Inf; nil if
// every value is finite. It is a debugging tool: the check costs one reduction per node.
// Masks use −Inf on purpose (the default fill), so for masked attention FirstNaN is usually the
// question to ask. Errors (bad arguments, panics inside fn) are returned.
func FirstNonFinite(backend backends.Backend, ctx *context.Context,
	fn func(ctx *context.Context, inputs []*Node) []*Node, args ...any) (*NonFiniteNode, error) {
	return firstBad(backend, ctx, fn, IsFinite, args)
}

// FirstNaN is FirstNonFinite for NaN only (±Inf values are accepted).
func FirstNaN(backend backends.Backend, ctx *context.Context,
	fn func(ctx *context.Context, inputs []*Node) []*Node, args ...any) (*NonFiniteNode, error) {
	return firstBad(backend, ctx, fn, func(x *Node) *Node { return LogicalNot(IsNaN(x)) }, args)
}

// firstBad returns the first float node (in creation order) for which good is false somewhere.
func firstBad(backend backends.Backend, ctx *context.Context,
	fn func(ctx *context.Context, inputs []*Node) []*Node, good func(x *Node) *Node, args []any) (*NonFiniteNode, error) {
	if backend == nil || ctx == nil || fn == nil || len(args) == 0 {
		return nil, &mhalib.ArgumentError{Arg: "FirstNonFinite", Msg: "needs a backend, a ctx, fn and at least one input argument"}
	}
	var checked []*Node
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, inputs []*Node) []*Node {
		g := inputs[0].Graph()
		g.SetTraced(true)
		outputs := fn(ctx, inputs)
		candidates := slices.Clone(g.Nodes())
		checked = checked[:0]
		var flags []*Node
		for _, n := range candidates {
			if n.NumOutputs() != 1 || !n.DType().IsFloat() {
				continue
			}
			checked = append(checked, n)
			flags = append(flags, ConvertDType(LogicalAll(good(n)), dtypes.Int32)) // scalar: 1 if good
		}
		if len(flags) == 0 {
			flags = append(flags, Const(g, int32(1)))
		}
		return append(outputs, Stack(flags, 0)) // outputs..., [number of checked nodes]
	})
	if err != nil {
		return nil, err
	}
	defer exec.Finalize()
	results, err := exec.Exec(args...)
	if err != nil {
		return nil, err
	}
	ok, err := tensors.CopyFlatData[int32](results[len(results)-1])
	if err != nil {
		return nil, err
	}
	for i, flag := range ok {
		if flag == 0 && i < len(checked) {
			n := checked[i]
			trace := ""
			if e := n.Trace(); e != nil {
				trace = fmt.Sprintf("%+v", e)
			}
			return &NonFiniteNode{ID: int(n.Id()), Node: n.String(), Trace: trace}, nil
		}
	}
	return nil, nil
}

// NonFinite counts the NaN and ±Inf entries of a Float32 or Float64 tensor and returns the index
// of the first, one coordinate per axis (nil when every entry is finite).
func NonFinite(t *tensors.Tensor) (count int, first []int, err error) {
	data, err := float64s(t, "t")
	if err != nil {
		return 0, nil, err
	}
	at := -1
	for i, v := range data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if count == 0 {
				at = i
			}
			count++
		}
	}
	if count == 0 {
		return 0, nil, nil
	}
	dims := t.Shape().Dimensions
	first = make([]int, len(dims))
	for ax := len(dims) - 1; ax >= 0; ax-- {
		first[ax] = at % dims[ax]
		at /= dims[ax]
	}
	return count, first, nil
}
