// Package grader holds what every lesson's grader (lessons/NN_name/*_test.go) shares: the backend
// the exercises run on, running a student's graph code without letting a panic kill the test,
// comparing a result with a reference in words a student can act on, and reading the PyTorch
// fixtures in lessons/testdata.
//
// Messages name the check, the expected and the received shape, the first element that differs,
// and end with a pointer to the lesson's hint. `mhalab lessons check` shows them as they are.
//
// The exercises run on the pure-Go backend unless $MHALAB_LESSONS_BACKEND names another
// (xla:cpu needs the build tag lessons_xla, which `mhalab lessons check --backend xla:cpu` adds).
//
// Under `mhalab lessons`, every call of the student's code (Run, RunList, Compile, RunCtx, Call)
// crosses from the judge to the worker and back (remote.go): a grader states its checks as
// usual, but calls the student's plain functions through Call, and its build functions set no
// variable outside themselves (the judge never runs them with the student's code). Random
// inputs and shapes come from Rand, Dim and Seed, which follow the run's seed.
package grader

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	_ "github.com/mhalab/mhalab/fastgo" // fast pure-Go matmul for the "go" backend (MHALAB_FASTGO=0: off)
	"github.com/mhalab/mhalab/lessons/graderenv"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// BackendEnv names the backend the exercises run on: "go" (default) or "xla:cpu".
const BackendEnv = graderenv.Backend

// newXLA creates an XLA backend; backend_xla.go sets it under the build tag lessons_xla.
var newXLA func(spec string) (backends.Backend, error)

var (
	backendOnce sync.Once
	backend     backends.Backend
	backendErr  error
)

// BackendName is the backend the exercises run on: $MHALAB_LESSONS_BACKEND, or "go".
func BackendName() string {
	if b := strings.TrimSpace(os.Getenv(BackendEnv)); b != "" {
		return b
	}
	return "go"
}

// Backend returns the backend the exercises run on (see BackendName), created once.
// It stops the test when that backend cannot be created.
func Backend(t testing.TB) backends.Backend {
	t.Helper()
	b, err := backendOrError()
	if err != nil {
		t.Fatalf("cannot create the backend: %v", err)
	}
	return b
}

// backendOrError is Backend without a test. A judge only builds graphs (to count results): it
// always uses the pure-Go backend.
func backendOrError() (backends.Backend, error) {
	backendOnce.Do(func() {
		name := BackendName()
		if mustSession().role == roleJudge {
			name = "go"
		}
		switch {
		case name == "go":
			// ops_sequential: with parallel ops, the pure-Go backend of GoMLX v0.26 can deadlock
			// when several DotGenerals run side by side (each waits for workers the others hold).
			backend, backendErr = simplego.New("ops_sequential")
		case strings.HasPrefix(name, "xla:") && newXLA != nil:
			backend, backendErr = newXLA(name)
		case strings.HasPrefix(name, "xla:"):
			backendErr = fmt.Errorf("backend %s needs the build tag lessons_xla (`mhalab lessons check --backend %s` adds it)", name, name)
		default:
			backendErr = fmt.Errorf("unknown backend %q in $%s: use go or xla:cpu", name, BackendEnv)
		}
	})
	return backend, backendErr
}

// Lesson names the exercise in messages.
type Lesson struct {
	Number int    // 1, 2, ...
	Dir    string // "01_linear"
}

// Hint is the line that ends every failure message.
func (l Lesson) Hint() string {
	return fmt.Sprintf("Stuck? Run `mhalab lessons hint %d` (or read lessons/%s/hint.md).", l.Number, l.Dir)
}

// hinted remembers the checks that already end with the hint.
var hinted sync.Map

// addHint makes the hint the last line of a failing check's output, once.
func (l Lesson) addHint(t testing.TB) {
	if _, done := hinted.LoadOrStore(t.Name(), true); !done {
		t.Cleanup(func() {
			if t.Failed() {
				t.Log(l.Hint())
			}
		})
	}
}

// Failf fails the check with a message; the check's output ends with the hint.
func (l Lesson) Failf(t testing.TB, format string, args ...any) {
	t.Helper()
	l.addHint(t)
	t.Errorf(format, args...)
}

// Fatalf fails the check with a message and stops it; its output ends with the hint.
func (l Lesson) Fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	l.addHint(t)
	t.Fatalf(format, args...)
}

// Run builds a graph with build, which calls the student's code, executes it on the lesson's
// backend with inputs (*tensors.Tensor or Go slices) and returns the outputs. When the student's
// code panics, returns a nil node, or GoMLX rejects the graph, it stops the check with a message
// that says so, naming what ("SplitHeads(x, 4)"). In a judge (remote.go) the student's process
// computes the outputs; the judge checks them and their number (the judge builds the graph with
// the original stub to count them). So build must not set variables outside itself: what it
// finds out in the student's process comes back through Call.
func (l Lesson) Run(t testing.TB, what string, build func(g *Graph, in []*Node) []*Node, inputs ...any) []*tensors.Tensor {
	t.Helper()
	s := mustSession()
	count := -1
	if s.role == roleJudge {
		count = traceCount(build, inputs)
	}
	return l.remote(t, s, "run", what, 0, inputs, count, func(in []*tensors.Tensor) ([]*tensors.Tensor, string) {
		return runLocal(what, build, in)
	})
}

// RunList is Run for a build function whose number of results depends on the student's code
// (one per head, …): the judge does not check how many come back.
func (l Lesson) RunList(t testing.TB, what string, build func(g *Graph, in []*Node) []*Node, inputs ...any) []*tensors.Tensor {
	t.Helper()
	s := mustSession()
	return l.remote(t, s, "run", what, 0, inputs, -1, func(in []*tensors.Tensor) ([]*tensors.Tensor, string) {
		return runLocal(what, build, in)
	})
}

// runLocal runs build on the lesson's backend in this process; it returns the outputs, or why
// it failed in words for the student.
func runLocal(what string, build func(g *Graph, in []*Node) []*Node, in []*tensors.Tensor) ([]*tensors.Tensor, string) {
	b, err := backendOrError()
	if err != nil {
		return nil, "cannot create the backend: " + err.Error()
	}
	exec, numOuts := newGraphExec(b, build, len(in))
	return execLocal(what, exec, numOuts, in)
}

// newGraphExec wraps build: a nil result is an error, and the inputs are returned too (the
// pure-Go backend rejects graphs with unused parameters: a stub that ignores an input would fail
// for that reason instead of its result). *numOuts is set when the graph is built.
func newGraphExec(b backends.Backend, build func(g *Graph, in []*Node) []*Node, numInputs int) (func() (*Exec, error), *int) {
	numOuts := new(int)
	wrapped := func(g *Graph, in []*Node) []*Node {
		outs := build(g, in)
		for i, o := range outs {
			if o == nil {
				panic(fmt.Errorf("result %d is a nil *Node: return a node built from the inputs", i+1))
			}
		}
		*numOuts = len(outs)
		return append(outs, in...)
	}
	return func() (*Exec, error) {
		if numInputs == 0 {
			return NewExec(b, func(g *Graph) []*Node { return wrapped(g, nil) })
		}
		return NewExec(b, func(in []*Node) []*Node { return wrapped(in[0].Graph(), in) })
	}, numOuts
}

// execLocal creates (once, through mk) and runs the graph; it catches the student's panics.
func execLocal(what string, mk func() (*Exec, error), numOuts *int, in []*tensors.Tensor) ([]*tensors.Tensor, string) {
	outs, fail := guarded(what, in, func(args []any) ([]*tensors.Tensor, error) {
		exec, err := mk()
		if err != nil {
			return nil, err
		}
		return exec.Exec(args...)
	})
	if fail != "" {
		return nil, fail
	}
	return outs[:*numOuts], ""
}

// guarded runs fn with the inputs as Exec's arguments and turns a panic of the student's code or
// an error of GoMLX into the message a student reads.
func guarded(what string, in []*tensors.Tensor, fn func(args []any) ([]*tensors.Tensor, error)) ([]*tensors.Tensor, string) {
	args := make([]any, len(in))
	for i, x := range in {
		args[i] = x
	}
	var (
		outs []*tensors.Tensor
		err  error
	)
	if panicked := catch(func() { outs, err = fn(args) }); panicked != nil {
		return nil, fmt.Sprintf("%s panicked: %v", what, panicked)
	}
	if err != nil {
		return nil, fmt.Sprintf("%s failed while building or running the graph:\n%s", what, explain(err))
	}
	return outs, ""
}

// Compile is Run for a graph executed several times with different values (same shapes): it
// returns a function that runs it. The graph is compiled once; a panic or error on any call
// stops the check with a message naming what.
func (l Lesson) Compile(t testing.TB, what string, build func(g *Graph, in []*Node) []*Node) func(inputs ...any) []*tensors.Tensor {
	t.Helper()
	s := mustSession()
	var (
		exec    *Exec
		execErr error
		made    bool
		numOuts *int
		mk      func() (*Exec, error)
		count   = -2 // not traced yet
		handle  int
	)
	if s.role == roleWorker {
		req, err := s.next("compile", t.Name(), what)
		if err != nil {
			l.Fatalf(t, "%s: %v", what, err)
		}
		handle = req.Seq
		s.answer(response{})
	} else if s.role == roleJudge {
		resp, err := s.ask(request{Kind: "compile", Test: t.Name(), What: what})
		if err != nil {
			l.Fatalf(t, "%s: not run: %v", what, err)
		}
		if resp.Fail != "" {
			l.Fatalf(t, "%s", resp.Fail)
		}
		handle = resp.Seq
	}
	return func(inputs ...any) []*tensors.Tensor {
		t.Helper()
		if s.role == roleJudge && count == -2 {
			count = traceCount(build, inputs)
		}
		return l.remote(t, s, "exec", what, handle, inputs, count, func(in []*tensors.Tensor) ([]*tensors.Tensor, string) {
			if mk == nil {
				b, err := backendOrError()
				if err != nil {
					return nil, "cannot create the backend: " + err.Error()
				}
				mk, numOuts = newGraphExec(b, build, len(in))
				inner := mk
				mk = func() (*Exec, error) { // compiled once, reused by every call
					if !made {
						exec, execErr = inner()
						made = true
					}
					return exec, execErr
				}
			}
			return execLocal(what, mk, numOuts, in)
		})
	}
}

// RunCtx is Run with a context for variables, for exercises that create them.
func (l Lesson) RunCtx(t testing.TB, what string, ctx *context.Context, build func(ctx *context.Context, g *Graph, in []*Node) []*Node, inputs ...any) []*tensors.Tensor {
	t.Helper()
	s := mustSession()
	return l.remote(t, s, "runctx", what, 0, inputs, -1, func(in []*tensors.Tensor) ([]*tensors.Tensor, string) {
		b, err := backendOrError()
		if err != nil {
			return nil, "cannot create the backend: " + err.Error()
		}
		return guarded(what, in, func(args []any) ([]*tensors.Tensor, error) {
			exec, err := context.NewExec(b, ctx, func(ctx *context.Context, in []*Node) []*Node {
				return build(ctx, in[0].Graph(), in)
			})
			if err != nil {
				return nil, err
			}
			return exec.Exec(args...)
		})
	})
}

// traceCount builds (does not run) the grader's graph in the judge, with the original stub, to
// learn how many results it returns; -1 if that cannot be known.
func traceCount(build func(g *Graph, in []*Node) []*Node, inputs []any) (count int) {
	count = -1
	in, err := asTensors(inputs)
	if err != nil {
		return -1
	}
	b, err := backendOrError()
	if err != nil {
		return -1
	}
	_ = catch(func() {
		g := NewGraph(b, "trace")
		params := make([]*Node, len(in))
		for i, x := range in {
			params[i] = Parameter(g, fmt.Sprintf("in%d", i), x.Shape())
		}
		count = len(build(g, params))
	})
	return count
}

// catch runs fn and returns what it panicked with, or nil.
func catch(fn func()) (panicked any) {
	defer func() { panicked = recover() }()
	fn()
	return nil
}

// explain shortens a GoMLX error to its message (no stack trace) and adds a note for
// errors students meet often.
func explain(err error) string {
	msg := err.Error()
	if len(msg) > 1200 {
		msg = msg[:1200] + " …"
	}
	msg = "    " + strings.ReplaceAll(msg, "\n", "\n    ")
	if strings.Contains(msg, "index out of range") && BackendName() == "go" {
		msg += "\n(The pure-Go backend fails like this when the graph has a node no result uses: return what you compute, or do not compute it.)"
	}
	return msg
}

// Close checks that got equals want element by element within tol (absolute, plus tol relative
// to |want|): first the shape, then every value. It reports the first element that differs, and
// how many do. NaN never equals anything; equal infinities are equal.
func (l Lesson) Close(t testing.TB, what string, got *tensors.Tensor, want *mhatest.Tensor, tol float64) bool {
	t.Helper()
	g, err := Host(got)
	if err != nil {
		l.Failf(t, "%s: %v", what, err)
		return false
	}
	return l.CloseHost(t, what, g, want, tol)
}

// CloseHost is Close for a result already on the host.
func (l Lesson) CloseHost(t testing.TB, what string, got, want *mhatest.Tensor, tol float64) bool {
	t.Helper()
	if d := mhatest.Diff(got, want, tol); d != "" {
		l.Failf(t, "%s: %s", what, d)
		return false
	}
	return true
}

// Index turns a flat row-major position into a multi-index of shape (mhatest.Index).
func Index(shape []int, flat int) []int { return mhatest.Index(shape, flat) }

// Host copies a float tensor (float32 or float64) into a float64 mhatest.Tensor.
func Host(t *tensors.Tensor) (*mhatest.Tensor, error) {
	if t == nil {
		return nil, fmt.Errorf("got no tensor (nil)")
	}
	dims := t.Shape().Dimensions
	switch t.DType() {
	case dtypes.Float32:
		return mhatest.FromFloat32(tensors.MustCopyFlatData[float32](t), dims...), nil
	case dtypes.Float64:
		return mhatest.FromFloat64(tensors.MustCopyFlatData[float64](t), dims...), nil
	}
	return nil, fmt.Errorf("expected a float32 or float64 tensor, got %s", t.Shape())
}

// F32 converts a host tensor to a float32 GoMLX tensor (what the exercises compute in).
func F32(x *mhatest.Tensor) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(x.Float32(), x.Shape...)
}

// Rand returns a tensor of values drawn from U(−1, 1) and rounded to float32, so that the float32
// graph and the float64 reference see exactly the same inputs.
// The values depend on the run's seed too (RunSeed): a grading run draws fresh ones.
func Rand(seed uint64, shape ...int) *mhatest.Tensor {
	x := mhatest.Rand(rand.New(rand.NewPCG(seed, RunSeed())), -1, 1, shape...)
	return RoundF32(x)
}

// RoundF32 rounds every element to the nearest float32.
func RoundF32(x *mhatest.Tensor) *mhatest.Tensor {
	return mhatest.FromFloat32(x.Float32(), x.Shape...)
}

// Scale returns x·s (a new tensor, rounded to float32).
func Scale(x *mhatest.Tensor, s float64) *mhatest.Tensor {
	y := x.Clone()
	for i := range y.Data {
		y.Data[i] *= s
	}
	return RoundF32(y)
}

// Seed mixes n with the run's seed (RunSeed), for the random states a grader hands a student's
// code (graph.RNGStateFromSeed): a grading run draws fresh ones.
func Seed(n uint64) int64 {
	return int64((n*0x9e3779b97f4a7c15 ^ RunSeed()) >> 1)
}

// Dim draws an integer in [lo, hi] for the dimension named by key, from the run's seed: the
// judge and the worker draw the same, and every grading run draws afresh (a submission cannot
// be written for fixed shapes).
func Dim(key uint64, lo, hi int) int {
	r := rand.New(rand.NewPCG(key, RunSeed()^0x5eed_d135))
	return lo + r.IntN(hi-lo+1)
}
