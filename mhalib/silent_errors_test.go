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
				plain, _ := mhalib.ScaledDotProductAttention(q, q, v).DoneWithWeights()
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
