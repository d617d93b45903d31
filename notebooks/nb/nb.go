// Package nb holds what mhalab's notebooks share that is not attention: choosing the backend,
// checks that stop a notebook when a number is wrong, reading tensors, measuring time and
// memory, and drawing (heatmaps, charts, block diagrams as SVG; tables as HTML).
//
// Attention itself lives in mhalib; notebooks call it. Pictures are returned as strings, which a
// notebook shows with gonbui.DisplayHTML (this package does not import GoNB).
//
// A check that fails panics with an error. In a GoNB cell that ends the cell's program with
// "panic: …" and "exit status 2", which scripts/notebooks.py (make notebooks) reports as a
// failure of that notebook and cell.
package nb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/fastgo" // fast pure-Go matmul for the "go" backend (MHALAB_FASTGO=0: off)
	"github.com/mhalab/mhalab/mhalib/mhatest"
	"github.com/mhalab/mhalab/xla"
)

var (
	backendOnce sync.Once
	backend     backends.Backend
	backendWhy  string
	hloDumpErr  error // of xla.EnableHLODump, called before the backend is created
)

// Backend returns the backend of this notebook run, created once per cell program: the one
// $GOMLX_BACKEND names (go, xla:cpu, xla:cuda), else XLA CPU when its plugin loads, else the
// pure-Go backend (xla.NewWithReason("")). It panics with the reason when the named backend
// cannot be created.
func Backend() backends.Backend {
	backendOnce.Do(func() {
		// XLA reads $XLA_FLAGS once, when the first XLA backend is created: ask for the HLO
		// dumps MemoryUse reads (xla.OptimizedHLO) before that. If it cannot (XLA_FLAGS
		// already dumps elsewhere), MemoryUse reports why.
		hloDumpErr = xla.EnableHLODump()
		var err error
		backend, backendWhy, err = xla.NewWithReason("")
		Must(err)
	})
	return backend
}

// BackendReason says which backend Backend chose and why ("go (from GOMLX_BACKEND=go)"), and
// for the pure-Go backend why fastgo installed nothing, if it did not (fastgo.InstallError).
func BackendReason() string {
	Backend()
	if _, pureGo := backend.(*simplego.Backend); pureGo && fastgo.InstallError() != nil {
		return backendWhy + "; " + fastgo.InstallError().Error()
	}
	return backendWhy
}

// IsXLA reports whether Backend is an XLA backend (which has HLO, StableHLO and XLA's memory
// figures).
func IsXLA() bool { return Backend().Name() == "xla" }

// Check prints "✓ " and the message when ok, and otherwise panics with an error
// "check failed: <message>", which ends the cell (and fails the notebook run).
func Check(ok bool, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !ok {
		panic(fmt.Errorf("check failed: %s", msg))
	}
	fmt.Println("✓ " + msg)
}

// Must panics with err when it is not nil.
func Must(err error) {
	if err != nil {
		panic(err)
	}
}

// Must1 returns v, or panics with err when it is not nil.
func Must1[T any](v T, err error) T {
	Must(err)
	return v
}

// Floats returns the elements of a Float32 or Float64 tensor as float64 (row-major).
func Floats(t *tensors.Tensor) []float64 {
	switch t.DType() {
	case dtypes.Float32:
		f32 := Must1(tensors.CopyFlatData[float32](t))
		out := make([]float64, len(f32))
		for i, v := range f32 {
			out[i] = float64(v)
		}
		return out
	case dtypes.Float64:
		return Must1(tensors.CopyFlatData[float64](t))
	}
	panic(fmt.Errorf("nb.Floats: tensor %s is not Float32 or Float64", t.Shape()))
}

// Matrix returns the [rows, cols] matrix formed by the last two axes of t at the given leading
// indices: Matrix(weights, b, h) of weights [B, h, Lq, Lk] is head h of example b, Lq×Lk.
func Matrix(t *tensors.Tensor, leading ...int) [][]float64 {
	dims := t.Shape().Dimensions
	if len(dims) < 2 || len(leading) != len(dims)-2 {
		panic(fmt.Errorf("nb.Matrix: tensor %s needs %d leading indices, got %v", t.Shape(), max(len(dims)-2, 0), leading))
	}
	offset := 0
	for i, idx := range leading {
		if idx < 0 || idx >= dims[i] {
			panic(fmt.Errorf("nb.Matrix: index %d = %d out of range for tensor %s", i, idx, t.Shape()))
		}
		offset = offset*dims[i] + idx
	}
	rows, cols := dims[len(dims)-2], dims[len(dims)-1]
	data := Floats(t)[offset*rows*cols : (offset+1)*rows*cols]
	m := make([][]float64, rows)
	for r := range m {
		m[r] = data[r*cols : (r+1)*cols]
	}
	return m
}

// MaxAbsDiff returns max |a − b| over all elements; a and b must have the same dimensions.
// NaN anywhere gives NaN; equal infinities count as equal.
func MaxAbsDiff(a, b *tensors.Tensor) float64 {
	if !slices.Equal(a.Shape().Dimensions, b.Shape().Dimensions) {
		panic(fmt.Errorf("nb.MaxAbsDiff: shapes %s and %s differ", a.Shape(), b.Shape()))
	}
	return MaxAbsDiffFloats(Floats(a), Floats(b))
}

// MaxAbsDiffFloats is MaxAbsDiff for slices of the same length.
func MaxAbsDiffFloats(a, b []float64) float64 {
	if len(a) != len(b) {
		panic(fmt.Errorf("nb.MaxAbsDiffFloats: lengths %d and %d differ", len(a), len(b)))
	}
	d := 0.0
	for i := range a {
		switch {
		case math.IsNaN(a[i]) || math.IsNaN(b[i]):
			return math.NaN()
		case a[i] == b[i]: // also equal infinities
		default:
			d = math.Max(d, math.Abs(a[i]-b[i]))
		}
	}
	return d
}

// CheckClose checks that got and want agree within tol (max absolute difference) and prints it.
func CheckClose(what string, got, want *tensors.Tensor, tol float64) {
	d := MaxAbsDiff(got, want)
	Check(d <= tol, "%s: max |Δ| = %.2g (tolerance %g)", what, d, tol)
}

// Median runs fn runs times and returns the median duration (fn's first call is not timed if
// warmup is true: compilation and first-run allocations stay out).
func Median(runs int, warmup bool, fn func()) time.Duration {
	if warmup {
		fn()
	}
	times := make([]time.Duration, runs)
	for i := range times {
		start := time.Now()
		fn()
		times[i] = time.Since(start)
	}
	slices.Sort(times)
	return times[runs/2]
}

// AllocBytes returns the bytes the Go heap allocated while fn ran, with the garbage collector
// off and one OS thread running Go code (GOMAXPROCS 1) meanwhile, so that nothing is freed and
// the result is repeatable. On the pure-Go backend this counts every
// buffer the backend allocated (buffers it freed and took again from its pools count once);
// XLA allocates in C++, invisible here: use xla.OptimizedHLO's TempBytes there.
func AllocBytes(fn func()) uint64 {
	// One P: the backend's buffer pools (sync.Pool, one per P) then reuse buffers the same way
	// every time, so the figure does not depend on which thread ran which op.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runtime.GC()
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Bytes formats a byte count: "512 B", "12.0 KiB", "3.52 MiB".
func Bytes[T int | int64 | uint64](n T) string {
	v := float64(n)
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GiB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.2f MiB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	}
	return fmt.Sprintf("%d B", int64(n))
}

// Memory is how much memory one execution of a graph takes, and how it was measured.
type Memory struct {
	// Bytes is the main figure: on XLA the scratch memory for intermediate values (buffer
	// assignment's temp bytes), on the pure-Go backend the Go heap allocated by one run.
	Bytes int64
	// Total is, on XLA, every buffer of the execution (parameters, outputs, constants, scratch);
	// on the pure-Go backend it equals Bytes (which includes the outputs).
	Total int64
	How   string
}

// MemoryUse measures the memory one execution of graphFn takes for inputs of the given shapes.
// graphFn is a context graph function, as for context.NewExec (variables are created and
// initialised before measuring). On an XLA backend (Backend) it reads XLA's buffer assignment
// (xla.OptimizedHLO): Bytes is the scratch memory for intermediate values, the peak of what the
// graph needs beyond its inputs and outputs, and Total adds those. On the pure-Go backend it is
// the Go heap allocated by the first execution on a fresh backend (so its buffer pools are empty,
// and a buffer freed during the run and taken again counts once), outputs included.
func MemoryUse(graphFn any, inputShapes ...shapes.Shape) Memory {
	if IsXLA() {
		Must(hloDumpErr)
		dump := Must1(xla.OptimizedHLO(Backend(), context.New(), graphFn, inputShapes...))
		return Memory{Bytes: dump.TempBytes, Total: dump.TotalBytes, How: "XLA buffer assignment (scratch bytes; total with parameters and outputs)"}
	}
	fresh, _, err := xla.NewWithReason(xla.SpecGo)
	Must(err)
	defer fresh.Finalize()
	exec := Must1(context.NewExecAny(fresh, context.New(), graphFn))
	defer exec.Finalize()
	args := make([]any, len(inputShapes))
	for i, s := range inputShapes {
		args[i] = tensors.FromShape(s)
	}
	Must(exec.PreCompile(args...)) // compiles and initialises the variables
	var outputs []*tensors.Tensor
	n := int64(AllocBytes(func() { outputs = Must1(exec.Exec(args...)) }))
	for _, t := range outputs {
		t.FinalizeAll()
	}
	return Memory{Bytes: n, Total: n, How: "Go heap allocated by one run on a fresh pure-Go backend (outputs included)"}
}

// Randn returns a Float32 tensor of the given dimensions with entries drawn from N(0, 1), the
// same for the same seed.
func Randn(seed uint64, dims ...int) *tensors.Tensor {
	rng := rand.New(rand.NewPCG(seed, 0x6d68616c6162)) // "mhalab"
	data := make([]float32, shapes.Make(dtypes.Float32, dims...).Size())
	for i := range data {
		data[i] = float32(rng.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// ToRef converts a Float32 or Float64 tensor to the float64 reference tensor of mhatest (the
// plain-loop implementation mhalib's tests compare against).
func ToRef(t *tensors.Tensor) *mhatest.Tensor {
	return mhatest.FromFloat64(Floats(t), t.Shape().Dimensions...)
}

// FromRef converts an mhatest reference tensor to a Float32 tensor.
func FromRef(r *mhatest.Tensor) *tensors.Tensor {
	data := make([]float32, len(r.Data))
	for i, v := range r.Data {
		data[i] = float32(v)
	}
	return tensors.FromFlatDataAndDimensions(data, r.Shape...)
}

// Must2 returns a and b, or panics with err when it is not nil.
func Must2[A, B any](a A, b B, err error) (A, B) {
	Must(err)
	return a, b
}

// Exercise reports a reader's answer to an exercise: "✓ " and the message when ok, otherwise
// "… not solved yet — " and the hint. It never stops the notebook (an unsolved exercise is
// not an error); the folded solution cell after each exercise checks the answer with Check.
// It returns ok.
func Exercise(ok bool, hint, format string, args ...any) bool {
	if ok {
		fmt.Println("✓ " + fmt.Sprintf(format, args...))
	} else {
		fmt.Println("… not solved yet — " + hint)
	}
	return ok
}
