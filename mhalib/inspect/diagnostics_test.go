package inspect_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/inspect"
	"github.com/mhalab/mhalab/mhalib/train"
)

func TestCheckRowsSumToOne(t *testing.T) {
	ok := tensors.FromValue([][]float32{{0.25, 0.75}, {0, 0}, {1, 0}})
	if err := inspect.CheckRowsSumToOne(ok, 1e-6); err != nil {
		t.Errorf("valid weights: %v", err)
	}
	st, err := inspect.AttentionRowStats(ok)
	if err != nil || st.Rows != 3 || st.FullyMasked != 1 {
		t.Errorf("stats %+v, %v", st, err)
	}
	for name, w := range map[string]*tensors.Tensor{
		"sum 0.9":  tensors.FromValue([][]float64{{0.4, 0.5}}),
		"negative": tensors.FromValue([][]float64{{1.5, -0.5}}),
		"NaN":      tensors.FromValue([][]float64{{math.NaN(), 1}}),
	} {
		if err := inspect.CheckRowsSumToOne(w, 1e-6); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := inspect.CheckRowsSumToOne(tensors.FromValue([]int32{1}), 1e-6); err == nil {
		t.Errorf("int weights: no error")
	}
}

func TestHeadDiversity(t *testing.T) {
	same := tensors.FromValue([][][][]float64{{{{0.5, 0.5}}, {{0.5, 0.5}}}}) // [1, 2, 1, 2]
	if d := inspect.HeadDiversity(same); d != 0 {
		t.Errorf("identical heads: %g, want 0", d)
	}
	disjoint := tensors.FromValue([][][][]float64{{{{1, 0}}, {{0, 1}}}})
	if d := inspect.HeadDiversity(disjoint); math.Abs(d-math.Ln2) > 1e-15 {
		t.Errorf("disjoint heads: %g, want ln 2", d)
	}
	one := tensors.FromValue([][][][]float64{{{{1, 0}}}})
	if d := inspect.HeadDiversity(one); d != 0 {
		t.Errorf("one head: %g, want 0", d)
	}
}

func TestGradientReport(t *testing.T) {
	rep := inspect.GradientReport(map[string]*tensors.Tensor{
		"b": tensors.FromValue([]float32{1, -3}),
		"a": tensors.FromValue([]float64{0.5, math.Inf(1)}),
	})
	if len(rep) != 2 || rep[0].Name != "a" || rep[0].Finite || rep[0].MaxAbs != 0.5 || rep[1].MaxAbs != 3 || !rep[1].Finite {
		t.Errorf("report %+v", rep)
	}
	if err := inspect.CheckGradients(map[string]*tensors.Tensor{"a": tensors.FromValue([]float64{math.NaN()})}); err == nil {
		t.Errorf("CheckGradients: NaN not reported")
	}
}

// Every gradient of a masked MHA layer is finite, on both backends, and VariableGradients
// covers every weight.
func TestGradientsFiniteWithFullyMaskedRows(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		ctx := context.New()
		ctx.SetParam(context.ParamInitialSeed, int64(5))
		var names []string
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) []*Node {
			pad := Const(x.Graph(), [][]bool{{false, false, false}, {true, true, true}}) // batch 1: every key padded
			out := mhalib.MultiHeadAttention(ctx, x, x, x, 2).AddBiasKV(false).
				KeyPaddingMask(mhalib.MaskBlockedWhereTrue(pad)).Causal(mhalib.CausalTopLeft).Done()
			var grads []*Node
			names, grads = train.VariableGradients(ctx, ReduceAllSum(Mul(out, out)))
			return grads
		})
		x := tensors.FromFlatDataAndDimensions([]float32{.1, .2, .3, .4, .5, .6, .7, .8, .9, 1, 1.1, 1.2, -.1, -.2, -.3, -.4, -.5, -.6, -.7, -.8, -.9, -1, -1.1, -1.2}, 2, 3, 4)
		res := exec.MustExec(x)
		grads := map[string]*tensors.Tensor{}
		for i, n := range names {
			grads[n] = res[i]
		}
		if err := inspect.CheckGradients(grads); err != nil {
			t.Fatal(err)
		}
		rep := inspect.GradientReport(grads)
		if len(rep) != 4 { // in_proj_weight, in_proj_bias, out_proj/weight, out_proj/bias
			t.Errorf("gradient report %+v, want 4 variables", rep)
		}
		for _, st := range rep {
			if st.MaxAbs == 0 {
				t.Errorf("%s: zero gradient", st.Name)
			}
		}
	})
}

func TestFirstNonFinite(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		fn := func(ctx *context.Context, in []*Node) []*Node {
			y := MulScalar(in[0], 2)
			bad := Log(SubScalar(y, 1)) // log of negative numbers → NaN
			return []*Node{Exp(bad)}
		}
		x := tensors.FromValue([]float64{0.1, 3})
		n, err := inspect.FirstNonFinite(backend, context.New(), fn, x)
		if err != nil {
			t.Fatal(err)
		}
		if n == nil || !strings.Contains(n.Node, "Log") {
			t.Fatalf("first non-finite node: %v, want the Log", n)
		}
		if !strings.Contains(n.Trace, "diagnostics_test.go") {
			t.Errorf("trace does not point to the test: %s", n.Trace)
		}
		n, err = inspect.FirstNonFinite(backend, context.New(), fn, tensors.FromValue([]float64{1, 3}))
		if err != nil || n != nil {
			t.Errorf("finite graph: %v, %v", n, err)
		}
		// Causal masks use −inf on purpose: FirstNaN ignores it, FirstNonFinite reports it.
		ctx := context.New()
		ctx.SetParam(context.ParamInitialSeed, int64(1))
		mha := func(ctx *context.Context, in []*Node) []*Node {
			return []*Node{mhalib.MultiHeadAttention(ctx, in[0], in[0], in[0], 2).Causal(mhalib.CausalTopLeft).Done()}
		}
		xs := tensors.FromShape(shapes.Make(dtypes.Float32, 1, 3, 4))
		if n, err := inspect.FirstNaN(backend, ctx, mha, xs); err != nil || n != nil {
			t.Errorf("FirstNaN on causal MHA: %v, %v", n, err)
		}
		if n, err := inspect.FirstNonFinite(backend, ctx, mha, xs); err != nil || n == nil {
			t.Errorf("FirstNonFinite on causal MHA: %v, %v (want the −inf fill)", n, err)
		}
		if _, err := inspect.FirstNonFinite(backend, ctx, mha); err == nil {
			t.Errorf("no arguments: no error")
		}
	})
}

func TestMain(m *testing.M) { backendtest.Main(m, "mhalib/inspect") }

// goBackend is the pure-Go backend, as the command configures it.
func goBackend() backends.Backend { b, _ := backendtest.Get("go"); return b }
