package fastgo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/xla"
)

// refBackend is the backend of the tests' reference runs (fastgo switched off: GoMLX v0.26.0's
// own kernels), shared by the tests: its ops run one at a time. GoMLX's parallel executor
// deadlocks now and then on a machine with few CPUs when its own DotGeneral runs: every node task
// holds one of the worker pool's 2·NumCPU slots, and execDotGeneralSmall, inside such a task,
// waits in workersPool.WaitToStart for another slot for each part of its batch (fresh-clone CI on
// 2 CPUs: TestMultiHeadAttentionMatchesGoMLX/flash hung 20 minutes with four DotGenerals there).
// The values do not depend on the order the ops run in.
var refBackend = sync.OnceValue(func() backends.Backend {
	b, err := simplego.New(xla.SimpleGoConfig)
	if err != nil {
		panic(err)
	}
	return b
})

// forFastgo is the backend for a run with fastgo on (backend) or off (refBackend).
func forFastgo(backend backends.Backend, on bool) backends.Backend {
	if on {
		return backend
	}
	return refBackend()
}

// argsFor is xs as arguments of a run with fastgo on (as they are) or off (local copies: a tensor
// already on one backend cannot be used on another).
func argsFor(on bool, xs ...*tensors.Tensor) []any {
	args := make([]any, len(xs))
	for i, x := range xs {
		if on {
			args[i] = x
		} else {
			args[i] = localCopy(x)
		}
	}
	return args
}

// localCopy is x.LocalClone(); it panics on an error (a test bug).
func localCopy(x *tensors.Tensor) *tensors.Tensor {
	c, err := x.LocalClone()
	if err != nil {
		panic(err)
	}
	return c
}

func newBackend(t testing.TB) backends.Backend {
	t.Helper()
	b, err := simplego.New(testBackendConfig)
	if err != nil {
		t.Fatalf("simplego.New(%q): %v", testBackendConfig, err)
	}
	return b
}

// TestHookActive fails loudly when importing fastgo did not put its DotGeneral into simplego's
// executor table (a GoMLX other than v0.26.0, a linker that refused the go:linkname, or an
// executor registered at a higher priority): the pure-Go backend would silently be slow.
func TestHookActive(t *testing.T) {
	if err := fastgo.InstallError(); err != nil {
		t.Fatal(err) // a GoMLX upgrade: see the package doc, "On a GoMLX upgrade"
	}
	if !fastgo.Enabled() {
		t.Skipf("%s=0: the fast path is switched off in this environment", fastgo.EnvVar)
	}
	backend := newBackend(t)
	before := fastgo.Calls()
	out := MustExecOnce(backend, func(x *Node) *Node { return MatMul(x, x) }, [][]float32{{1, 2}, {3, 4}})
	if got := out.Value().([][]float32); fmt.Sprint(got) != "[[7 10] [15 22]]" {
		t.Fatalf("MatMul = %v, want [[7 10] [15 22]]", got)
	}
	if fastgo.Calls() == before {
		t.Fatalf("fastgo's DotGeneral did not run on the pure-Go backend: the go:linkname hook into "+
			"simplego's executor table is not active (%s)", fastgo.Status())
	}
	if len(fastgo.Ops()) == 1 {
		t.Fatalf("fastgo's element-wise executors are not installed: simplego.Node's fields could not be read (%s)", fastgo.Status())
	}
	t.Log(fastgo.Status())
}

// TestSIMDRequired: where the build is meant to have the SIMD kernel (scripts/test.sh sets
// MHALAB_FASTGO_REQUIRE_SIMD=1 together with GOEXPERIMENT=simd on amd64 machines with AVX2),
// a build without it is a failure, not a quiet 10× slowdown.
func TestSIMDRequired(t *testing.T) {
	if os.Getenv("MHALAB_FASTGO_REQUIRE_SIMD") != "1" {
		t.Skip("MHALAB_FASTGO_REQUIRE_SIMD is not 1")
	}
	// The float32 matmul kernel is assembly in every amd64 build; the packed products' kernels
	// (like the element-wise loops) are archsimd's only.
	if !fastgo.SIMD() || fastgo.QuantKernel() == "go" {
		t.Fatalf("the SIMD kernels are not built in (%s; packed: %s): build with GOEXPERIMENT=simd on amd64 and Go 1.26", fastgo.Kernel(), fastgo.QuantKernel())
	}
}

// dotCase is one DotGeneral configuration: shapes and axes as graph.DotGeneral takes them.
type dotCase struct {
	name              string
	lhs, rhs          []int
	lContract, lBatch []int
	rContract, rBatch []int
}

var dotCases = []dotCase{
	{"matmul", []int{37, 129}, []int{129, 65}, []int{1}, nil, []int{0}, nil},
	{"matmul_1x1", []int{1, 1}, []int{1, 1}, []int{1}, nil, []int{0}, nil},
	{"attention_scores", []int{2, 3, 33, 16}, []int{2, 3, 47, 16}, []int{3}, []int{0, 1}, []int{3}, []int{0, 1}},
	{"attention_values", []int{2, 3, 33, 47}, []int{2, 3, 47, 16}, []int{3}, []int{0, 1}, []int{2}, []int{0, 1}},
	{"projection", []int{4, 17, 40}, []int{40, 120}, []int{2}, nil, []int{0}, nil},
	{"two_contracting_transposed", []int{5, 9, 7}, []int{11, 7, 5}, []int{0, 2}, nil, []int{2, 1}, nil},
	{"batch_in_middle", []int{13, 3, 300}, []int{300, 3, 21}, []int{2}, []int{1}, []int{0}, []int{1}},
	{"two_batch_swapped", []int{2, 3, 6, 5}, []int{3, 2, 5, 4}, []int{3}, []int{0, 1}, []int{2}, []int{1, 0}},
}

func randomTensor(rng *rand.Rand, dtype dtypes.DType, dims []int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	switch dtype {
	case dtypes.Float64:
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return tensors.FromFlatDataAndDimensions(v, dims...)
	default:
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return tensors.FromFlatDataAndDimensions(v, dims...)
	}
}

func flat64(t *tensors.Tensor) []float64 {
	var out []float64
	t.MustConstFlatData(func(flat any) {
		switch v := flat.(type) {
		case []float32:
			for _, x := range v {
				out = append(out, float64(x))
			}
		case []float64:
			out = append(out, v...)
		}
	})
	return out
}

// run executes fn on the inputs with the fast path on or off and returns every output.
func run(t *testing.T, backend backends.Backend, fast bool, fn func([]*Node) []*Node, inputs ...*tensors.Tensor) [][]float64 {
	t.Helper()
	prev := fastgo.SetEnabled(fast)
	defer fastgo.SetEnabled(prev)
	exec, err := NewExec(forFastgo(backend, fast), fn)
	if err != nil {
		t.Fatalf("NewExec: %v", err)
	}
	outs, err := exec.Exec(argsFor(fast, inputs...)...)
	if err != nil {
		t.Fatalf("Exec (fast=%v): %v", fast, err)
	}
	res := make([][]float64, len(outs))
	for i, o := range outs {
		res[i] = flat64(o)
	}
	return res
}

// compare: |fast − gomlx| ≤ 2·2(k+1)·u·mag per element, mag the same computation on |inputs| —
// both sides are within 2(k+1)·u·mag of the exact value (the bound for any summation order).
func compare(t *testing.T, what string, fast, gomlx, mag []float64, k int, unit float64) {
	t.Helper()
	if len(fast) != len(gomlx) || len(fast) != len(mag) {
		t.Fatalf("%s: sizes %d, %d, %d differ", what, len(fast), len(gomlx), len(mag))
	}
	bound := 4 * float64(k+1) * unit
	for i := range fast {
		if !(math.Abs(fast[i]-gomlx[i]) <= bound*mag[i]+1e-30) {
			t.Fatalf("%s[%d]: fastgo %g, GoMLX %g (difference %.3g > bound %.3g)", what, i, fast[i], gomlx[i],
				math.Abs(fast[i]-gomlx[i]), bound*mag[i])
		}
	}
}

// TestDotGeneralMatchesGoMLX runs each configuration forward and through graph.Gradient (whose
// DotGenerals have transposed layouts) with fastgo on and off, in float32 and float64.
func TestDotGeneralMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	for ci, c := range dotCases {
		for _, dtype := range []dtypes.DType{dtypes.Float32, dtypes.Float64} {
			t.Run(c.name+"_"+dtype.String(), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(ci), 18))
				a, b := randomTensor(rng, dtype, c.lhs), randomTensor(rng, dtype, c.rhs)
				k := 1
				for _, ax := range c.lContract {
					k *= c.lhs[ax]
				}
				// Forward and the gradients of Σ(dot ⊙ w) with respect to both inputs.
				graphFn := func(abs bool) func(in []*Node) []*Node {
					return func(in []*Node) []*Node {
						x, y := in[0], in[1]
						if abs {
							x, y = Abs(x), Abs(y)
						}
						dot := DotGeneral(x, c.lContract, c.lBatch, y, c.rContract, c.rBatch)
						w := Sin(Iota(x.Graph(), dot.Shape(), dot.Rank()-1))
						if abs {
							w = Abs(w)
						}
						grads := Gradient(ReduceAllSum(Mul(dot, w)), x, y)
						return []*Node{dot, grads[0], grads[1]}
					}
				}
				before := fastgo.Calls()
				fast := run(t, backend, true, graphFn(false), a, b)
				if fastgo.Calls() < before+3 {
					t.Fatalf("fastgo ran %d DotGenerals, want 3 (forward and two gradients); %s", fastgo.Calls()-before, fastgo.Status())
				}
				gomlx := run(t, backend, false, graphFn(false), a, b)
				mag := run(t, backend, false, graphFn(true), a, b)
				unit := 0x1p-24
				if dtype == dtypes.Float64 {
					unit = 0x1p-53
				}
				// The gradients contract over the dot's other axes: bound with the largest.
				kMax := max(k, prodDims(c.lhs)/k, prodDims(c.rhs)/k)
				compare(t, "forward", fast[0], gomlx[0], mag[0], k, unit)
				compare(t, "d/dlhs", fast[1], gomlx[1], mag[1], kMax, unit)
				compare(t, "d/drhs", fast[2], gomlx[2], mag[2], kMax, unit)
			})
		}
	}
}

func prodDims(d []int) int {
	n := 1
	for _, x := range d {
		n *= x
	}
	return n
}

// TestOtherDTypesFallBack: a dtype fastgo does not compute (int32 here) goes to GoMLX's kernel
// and gives its answer.
func TestOtherDTypesFallBack(t *testing.T) {
	backend := newBackend(t)
	before := fastgo.Fallbacks()
	out := MustExecOnce(backend, func(x *Node) *Node { return MatMul(x, x) }, [][]int32{{1, 2}, {3, 4}})
	if got := fmt.Sprint(out.Value()); got != "[[7 10] [15 22]]" {
		t.Fatalf("int32 MatMul = %s, want [[7 10] [15 22]]", got)
	}
	if fastgo.Fallbacks() == before {
		t.Fatalf("an int32 DotGeneral did not fall back to GoMLX's kernel")
	}
}
