package dotgrad

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
)

// dotCase is one DotGeneral configuration.
type dotCase struct {
	lhs, rhs                                     []int
	lhsContract, lhsBatch, rhsContract, rhsBatch []int
}

var dotCases = []dotCase{
	{[]int{2, 3, 4}, []int{5, 4}, []int{2}, nil, []int{1}, nil},                          // Linear: x·Wᵀ
	{[]int{2, 3, 4, 5}, []int{2, 3, 6, 5}, []int{3}, []int{0, 1}, []int{3}, []int{0, 1}}, // q·kᵀ
	{[]int{2, 3, 4, 6}, []int{2, 3, 6, 5}, []int{3}, []int{0, 1}, []int{2}, []int{0, 1}}, // p·v
	{[]int{3, 2, 4, 5}, []int{5, 2, 3, 6}, []int{3, 0}, []int{1}, []int{0, 2}, []int{1}}, // batch not first, two contractions in another order
	{[]int{4}, []int{4}, []int{0}, nil, []int{0}, nil},                                   // dot product
	{[]int{2, 3}, []int{2, 4}, nil, []int{0}, nil, []int{0}},                             // batched outer product
	{[]int{6, 2}, []int{2, 6, 3}, []int{0}, []int{1}, []int{1}, []int{0}},                // transposed operands
}

func randomTensor(rng *rand.Rand, dims []int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]float64, n)
	for i := range data {
		data[i] = 2*rng.Float64() - 1
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// TestDotGeneralVJPEqualsGoMLX compares this package's DotGeneral gradient with GoMLX's own rule.
func TestDotGeneralVJPEqualsGoMLX(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for i, c := range dotCases {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 1))
				outShape := func() []int { // computed by GoMLX from a throw-away graph
					g := NewGraph(backend, "shape")
					defer g.Finalize()
					l := Parameter(g, "l", shapes.Make(dtypes.Float64, c.lhs...))
					r := Parameter(g, "r", shapes.Make(dtypes.Float64, c.rhs...))
					return DotGeneral(l, c.lhsContract, c.lhsBatch, r, c.rhsContract, c.rhsBatch).Shape().Dimensions
				}()
				lhs, rhs, cot := randomTensor(rng, c.lhs), randomTensor(rng, c.rhs), randomTensor(rng, outShape)
				exec, err := NewExec(backend, func(l, r, cot *Node) []*Node {
					loss := ReduceAllSum(Mul(DotGeneral(l, c.lhsContract, c.lhsBatch, r, c.rhsContract, c.rhsBatch), cot))
					var ours, theirs []*Node
					withDotGeneralGradient(t, true, func() { ours = Gradient(loss, l, r) })
					withDotGeneralGradient(t, false, func() { theirs = Gradient(loss, l, r) })
					return append(ours, theirs...)
				})
				if err != nil {
					t.Fatal(err)
				}
				defer exec.Finalize()
				out, err := exec.Exec(lhs, rhs, cot)
				if err != nil {
					t.Fatal(err)
				}
				for k, name := range []string{"lhs", "rhs"} {
					got, want := tensors.MustCopyFlatData[float64](out[k]), tensors.MustCopyFlatData[float64](out[k+2])
					if !out[k].Shape().Equal(out[k+2].Shape()) {
						t.Fatalf("d/d%s shape %s, GoMLX's %s", name, out[k].Shape(), out[k+2].Shape())
					}
					for j := range got {
						if math.Abs(got[j]-want[j]) > 1e-12 {
							t.Fatalf("d/d%s[%d] = %g, GoMLX's rule gives %g", name, j, got[j], want[j])
						}
					}
				}
			})
		}
	})
}

// TestDotGeneralVJPNoOuterProduct checks what the rule is for: the gradient of a Linear layer's
// weight builds no tensor of the size of the outer product [B, L, O, E].
func TestDotGeneralVJPNoOuterProduct(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, L, E, O = 2, 64, 32, 48
		for _, rule := range []struct {
			name      string
			installed bool
		}{{"mhalib", true}, {"GoMLX", false}} {
			var largest int
			withDotGeneralGradient(t, rule.installed, func() { largest = linearGradientLargestNode(backend, B, L, E, O) })
			if got := largest >= B*L*E*O; got != !rule.installed {
				t.Errorf("%s rule: a node of the outer product's size %d: %v", rule.name, B*L*E*O, got)
			}
		}
	})
}

// linearGradientLargestNode builds the gradient of Σ x·wᵀ (x [B, L, E], w [O, E]) with respect
// to w under the DotGeneral gradient registered now, and returns the number of elements of the
// graph's largest node.
func linearGradientLargestNode(backend backends.Backend, B, L, E, O int) int {
	g := NewGraph(backend, "linear-grad")
	defer g.Finalize()
	x := Parameter(g, "x", shapes.Make(dtypes.Float32, B, L, E))
	w := Parameter(g, "w", shapes.Make(dtypes.Float32, O, E))
	_ = Gradient(ReduceAllSum(DotGeneral(x, []int{2}, nil, w, []int{1}, nil)), w)
	largest := 0
	for _, n := range g.Nodes() {
		largest = max(largest, n.Shape().Size())
	}
	return largest
}

// withDotGeneralGradient runs fn with this package's DotGeneral gradient installed or not, then puts
// back whichever rule was in effect before.
func withDotGeneralGradient(t *testing.T, installed bool, fn func()) {
	t.Helper()
	defer restoreDotGeneralGradient(Installed())
	restoreDotGeneralGradient(installed)
	fn()
}

// restoreDotGeneralGradient installs this package's DotGeneral gradient or GoMLX's.
func restoreDotGeneralGradient(installed bool) {
	if installed {
		Install()
	} else {
		Uninstall()
	}
}

// TestDotGeneralGradientInstallIsExplicit: Install replaces GoMLX's rule (twice is the same as once) and
// Uninstall restores GoMLX's rule, as the graphs built under each show.
func TestDotGeneralGradientInstallIsExplicit(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		defer restoreDotGeneralGradient(Installed())
		const B, L, E, O = 2, 16, 8, 12
		outer := B * L * E * O
		for step, tc := range []struct {
			do        func()
			installed bool
		}{
			{Uninstall, false},
			{Install, true},
			{Install, true}, // idempotent
			{Uninstall, false},
			{Uninstall, false}, // idempotent
		} {
			tc.do()
			if got := Installed(); got != tc.installed {
				t.Fatalf("step %d: Installed() = %v, want %v", step, got, tc.installed)
			}
			if got := reflect.ValueOf(VJPRegistration[NodeTypeDotGeneral]).Pointer(); (got == reflect.ValueOf(goMLXDotGeneralVJP).Pointer()) == tc.installed {
				t.Fatalf("step %d: registered rule is GoMLX's: %v, want %v", step, !tc.installed, !tc.installed)
			}
			if got := linearGradientLargestNode(backend, B, L, E, O) >= outer; got == tc.installed {
				t.Fatalf("step %d (installed %v): a node of the outer product's size %d: %v", step, tc.installed, outer, got)
			}
		}
	})
}

func TestMain(m *testing.M) {
	ruleAtStart = reflect.ValueOf(VJPRegistration[NodeTypeDotGeneral]).Pointer()
	backendtest.Main(m, "mhalib/dotgrad")
}

// ruleAtStart is the DotGeneral gradient registered once every package of the test binary was
// loaded, before any test ran.
var ruleAtStart uintptr

// TestImportChangesNothing: importing dotgrad leaves GoMLX's rule registered (the one saved).
func TestImportChangesNothing(t *testing.T) {
	if ruleAtStart != reflect.ValueOf(goMLXDotGeneralVJP).Pointer() {
		t.Fatal("importing dotgrad replaced GoMLX's DotGeneral gradient (graph.VJPRegistration)")
	}
}
