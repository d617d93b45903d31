package mhalib_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// Regression tests for answers that used to be silently wrong (issue 11 §2).

// TestFlashAttentionNaNStaysInItsBatch: a NaN in one batch element's values must not reach
// another batch element's output. It did: every key block carried a dependency on one entry of
// the previous accumulator (batch 0, head 0), added as 0·token — and 0·NaN = NaN.
//
//	q, k, v: [B=2, h=1, L=4, D=2], v[0, 0, 0, 0] = NaN, blocks 2×2
func TestFlashAttentionNaNStaysInItsBatch(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, bad := range []float64{math.NaN(), math.Inf(1)} {
			const B, H, L, D = 2, 1, 4, 2
			q := make([]float64, B*H*L*D)
			for i := range q {
				q[i] = 0.1 * float64(i%7)
			}
			v := append([]float64(nil), q...)
			v[0] = bad
			qt := tensors.FromFlatDataAndDimensions(q, B, H, L, D)
			vt := tensors.FromFlatDataAndDimensions(v, B, H, L, D)
			exec, err := NewExec(backend, func(q, v *Node) []*Node {
				flash := mhalib.FlashAttention(q, q, v).BlockSizes(2, 2).Done()
				plain, _ := mhalib.ScaledDotProductAttention(q, q, v).Done()
				return []*Node{flash, plain}
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Exec(qt, vt)
			exec.Finalize()
			if err != nil {
				t.Fatal(err)
			}
			flash, plain := tensors.MustCopyFlatData[float64](out[0]), tensors.MustCopyFlatData[float64](out[1])
			half := len(flash) / 2 // batch 1 is the second half
			for i := half; i < len(flash); i++ {
				if math.IsNaN(plain[i]) || math.IsInf(plain[i], 0) {
					t.Fatalf("v[0] = %g: plain attention's batch 1 is not finite at %d: %v", bad, i, plain[half:])
				}
				if !(math.Abs(flash[i]-plain[i]) <= 1e-12) { // NaN fails too
					t.Fatalf("v[0] = %g: flash batch 1 = %v, plain attention's = %v", bad, flash[half:], plain[half:])
				}
			}
		}
	})
}

// TestCheckpointSharedVariableGradientsSum: a variable used by several blocks (here one weight
// w shared by both blocks of y = w·(w·x)) gets the sum of every block's contribution, as
// autodiff gives: d(w²·x)/dw = 2·w·x = 8 at w = 2, x = 2. It used to get only the last
// contribution computed (block 0's, 4).
func TestCheckpointSharedVariableGradientsSum(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		block := func(ctx *context.Context, x *Node) *Node {
			w := ctx.InAbsPath("/shared").Checked(false).VariableWithValue("w", 2.0).ValueGraph(x.Graph()) // scalar
			return Mul(x, w)                                                                               // [1, 1]
		}
		loss := func(ctx *context.Context, y *Node) *Node { return ReduceAllSum(y) }
		stack, err := mhalib.NewCheckpointStack(backend, context.New(), 2, block, loss)
		if err != nil {
			t.Fatal(err)
		}
		defer stack.Finalize()
		x := tensors.FromFlatDataAndDimensions([]float64{2}, 1, 1)
		ckpt, err := stack.Gradients(x)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := stack.GradientsAutodiff(x)
		if err != nil {
			t.Fatal(err)
		}
		for what, grads := range map[string]*mhalib.StackGradients{"checkpointed": ckpt, "autodiff": plain} {
			g, ok := grads.Variables["/shared/w"]
			if !ok {
				t.Fatalf("%s: no gradient for /shared/w: %v", what, keys(grads.Variables))
			}
			if got := tensors.ToScalar[float64](g); got != 8 {
				t.Errorf("%s d loss/d w = %g, want 8 (= 2·w·x)", what, got)
			}
		}
		assertClose(t, "d loss/d x", ckpt.Input, mhatest.FromFloat64([]float64{4}, 1, 1), 0)
	})
}

// TestForwardFlashRuns: Forward with Formulation(Flash) runs and returns no weights (Flash never
// forms them), with the same output as the default formulation. It used to fail always: Forward
// asked every formulation for its weights.
func TestForwardFlashRuns(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		x := tensors.FromFlatDataAndDimensions(mhatest.Rand(rand.New(rand.NewPCG(5, 5)), -1, 1, 2, 5, 8).Data, 2, 5, 8)
		ctx := context.New()
		want, wantW, err := mhalib.Forward(backend, ctx, x, x, x, 2, func(b *mhalib.MHABuilder) { b.Causal(mhalib.CausalTopLeft) })
		if err != nil {
			t.Fatal(err)
		}
		if wantW == nil {
			t.Fatal("HeadParallel: Forward returned no weights")
		}
		got, w, err := mhalib.Forward(backend, ctx, x, x, x, 2, func(b *mhalib.MHABuilder) {
			b.Causal(mhalib.CausalTopLeft).Formulation(mhalib.Flash)
		})
		if err != nil {
			t.Fatalf("Forward with Formulation(Flash): %v", err)
		}
		if w != nil {
			t.Errorf("Flash: Forward returned weights %s, want nil", w.Shape())
		}
		if !got.Shape().Equal(shapes.Make(dtypes.Float64, 2, 5, 8)) {
			t.Fatalf("Flash output shape %s", got.Shape())
		}
		assertClose(t, "Flash vs HeadParallel output", got, fromTensor(t, want), 1e-12)
	})
}

// TestImportLeavesGoMLXDotGeneralGradient: importing mhalib changes no global state of GoMLX's —
// GoMLX's own DotGeneral gradient (a broadcast product of the outer size B·L·O·E for x·Wᵀ) is
// the one registered when the tests start (issue 11 §3; it used to be replaced by an init
// function). mhalib/dotgrad's Install is the explicit switch.
func TestImportLeavesGoMLXDotGeneralGradient(t *testing.T) {
	const B, L, E, O = 2, 16, 8, 12
	backend, err := backendtest.Get("go")
	if err != nil {
		t.Fatal(err)
	}
	defer func(rule VJP) { VJPRegistration[NodeTypeDotGeneral] = rule }(VJPRegistration[NodeTypeDotGeneral])
	VJPRegistration[NodeTypeDotGeneral] = dotGeneralRuleAtStart
	g := NewGraph(backend, "linear-grad")
	defer g.Finalize()
	x := Parameter(g, "x", shapes.Make(dtypes.Float32, B, L, E))
	w := Parameter(g, "w", shapes.Make(dtypes.Float32, O, E))
	_ = Gradient(ReduceAllSum(DotGeneral(x, []int{2}, nil, w, []int{1}, nil)), w)
	largest := 0
	for _, n := range g.Nodes() {
		largest = max(largest, n.Shape().Size())
	}
	if largest < B*L*E*O {
		t.Fatalf("importing mhalib replaced GoMLX's DotGeneral gradient (graph.VJPRegistration): largest node %d, GoMLX's rule builds %d", largest, B*L*E*O)
	}
}
