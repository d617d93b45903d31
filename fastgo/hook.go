package fastgo

import (
	"fmt"
	"os"
	"sync/atomic"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/mhalab/mhalab/mhalib/dotgrad"
)

// nodeExecutor is simplego's (unexported) executor type; every type in it is exported.
type nodeExecutor = func(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

// setNodeExecutor is simplego.setNodeExecutor (exec.go): it installs an executor for an op type
// unless one with a higher priority is already installed. Its priority type is an int.
//
//go:linkname setNodeExecutor github.com/gomlx/gomlx/backends/simplego.setNodeExecutor
func setNodeExecutor(opType backends.OpType, priority int, executor nodeExecutor)

// gomlxDotGeneral is simplego.execDotGeneral, GoMLX's own DotGeneral executor: the fallback.
//
//go:linkname gomlxDotGeneral github.com/gomlx/gomlx/backends/simplego.execDotGeneral
func gomlxDotGeneral(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

// priorityUser is simplego's priorityUser, the level it reserves for "custom user overrides".
const priorityUser = 100

// EnvVar is the environment variable read once, when the package initialises: MHALAB_FASTGO=0
// switches the fast path off (SetEnabled changes it at run time) and installs no gradient;
// MHALAB_FASTGO=force installs everything even with a GoMLX other than GoMLXVersion.
const EnvVar = "MHALAB_FASTGO"

var (
	// installErr says why nothing was installed (a GoMLX other than GoMLXVersion), nil if it was.
	installErr error
	// enabled is the switch; never true when nothing was installed.
	enabled atomic.Bool
	// calls counts the DotGenerals this package computed; fallbacks counts those it handed to
	// GoMLX's executor (dtype not float32/float64, switched off, or unreadable node data).
	calls, fallbacks atomic.Int64
	// lastFallback is the reason of the most recent fallback for a float node (a string).
	lastFallback atomic.Value

	kernelF32 microKernel[float32]
	kernelF64 microKernel[float64]
)

// init checks the GoMLX version, then installs the executors and the gradient of DotGeneral —
// all of it or nothing.
func init() {
	if k, ok := simdKernelF32(); ok {
		kernelF32 = k
	} else {
		kernelF32 = goKernel[float32]()
	}
	if k, ok := simdKernelF64(); ok {
		kernelF64 = k
	} else {
		kernelF64 = goKernel[float64]()
	}
	env := os.Getenv(EnvVar)
	if installErr = versionDecision(env); installErr != nil {
		return
	}
	enabled.Store(env != "0")
	setNodeExecutor(backends.OpTypeDotGeneral, priorityUser, execDotGeneral)
	installElementwise()
	if env != "0" {
		// GoMLX v0.26 differentiates DotGeneral through a [batch, m, n, k] broadcast product;
		// mhalib/dotgrad, the one owner of that entry of GoMLX's gradient table, writes it as
		// two DotGenerals (on every backend).
		dotgrad.Install()
	}
}

// InstallError says why importing this package installed nothing — this program is built with a
// GoMLX other than GoMLXVersion — or nil when it installed its executors. A library never
// prints: the command (`mhalab backends`) and notebooks/nb show it.
func InstallError() error { return installErr }

// SetEnabled switches the fast path on or off for the whole process and returns the previous
// setting. Off, every op runs GoMLX's own kernel. It leaves the gradient of DotGeneral as it is
// (mhalib/dotgrad's Uninstall changes that). With nothing installed (InstallError) it does
// nothing and returns false.
func SetEnabled(on bool) (previous bool) {
	if installErr != nil {
		return false
	}
	return enabled.Swap(on)
}

// Enabled reports whether DotGenerals on the pure-Go backend use this package's GEMM.
func Enabled() bool { return enabled.Load() }

// Calls returns how many DotGenerals this package computed since the process started.
func Calls() int64 { return calls.Load() }

// Fallbacks returns how many DotGenerals it handed back to GoMLX's kernel.
func Fallbacks() int64 { return fallbacks.Load() }

// Kernel names the micro-kernels in use, e.g. "float32 avx512-8x32, float64 avx512-8x16"; the
// plain-Go kernel is "go-4x4".
func Kernel() string { return fmt.Sprintf("float32 %s, float64 %s", kernelF32.name, kernelF64.name) }

// SIMD reports whether a SIMD micro-kernel runs for float32.
func SIMD() bool { return kernelF32.name != goKernel[float32]().name }

// Status is one line for reports: on/off, kernels, and why it last fell back (if it did).
func Status() string {
	if installErr != nil {
		return installErr.Error()
	}
	state := "on"
	if !Enabled() {
		state = "off (" + EnvVar + "=0)"
	}
	s := fmt.Sprintf("fastgo %s: %s", state, Kernel())
	if nodeFieldsErr == nil {
		s += fmt.Sprintf("; element-wise ops (%d) %s", len(Ops())-1, vecName())
	}
	s += "; packed Q8_0/Q4_1 " + QuantKernel()
	if r, ok := lastFallback.Load().(string); ok && r != "" {
		s += "; last fallback: " + r
	}
	return s
}

// execDotGeneral is the executor installed in simplego: float32/float64 go to gemm, anything
// else (and everything while switched off) to GoMLX's executor.
func execDotGeneral(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (out *simplego.Buffer, err error) {
	kept := false // fuse.go: row maxima left with out for a ReduceMax
	var ins [2]*simplego.Buffer
	copy(ins[:], inputs)
	defer func() {
		if !kept {
			dropMaxima(out)
		}
		dropViews(ins[:], inputsOwned) // gatherview.go: the rows' records end with their last reader
	}()
	if len(inputs) == 2 {
		if mayBeQuant(backend, inputs) {
			materializeViews(backend, inputs) // a quantized product reads its buffers itself
		}
		if out, ok, err := execQuantDot(backend, node, inputs); ok {
			return out, err
		}
	}
	if !enabled.Load() || len(inputs) != 2 {
		fallbacks.Add(1)
		materializeViews(backend, inputs)
		return gomlxDotGeneral(backend, node, inputs, inputsOwned)
	}
	lhsShape, err := backend.BufferShape(inputs[0])
	if err != nil {
		return nil, err
	}
	rhsShape, err := backend.BufferShape(inputs[1])
	if err != nil {
		return nil, err
	}
	dtype := lhsShape.DType
	if (dtype != dtypes.Float32 && dtype != dtypes.Float64) || rhsShape.DType != dtype {
		fallbacks.Add(1)
		materializeViews(backend, inputs)
		return gomlxDotGeneral(backend, node, inputs, inputsOwned)
	}
	p, err := readDotParams(node)
	if err != nil {
		lastFallback.Store(err.Error())
		fallbacks.Add(1)
		materializeViews(backend, inputs)
		return gomlxDotGeneral(backend, node, inputs, inputsOwned)
	}
	lhsFlat, err := backend.BufferData(inputs[0])
	if err != nil {
		return nil, err
	}
	rhsFlat, err := backend.BufferData(inputs[1])
	if err != nil {
		return nil, err
	}
	if rows := viewOf(inputs[0], lhsFlat); rows != nil { // gatherview.go: rows read where they are
		lhsFlat = rows
		rowViewReads.Add(1)
	}
	if rows := viewOf(inputs[1], rhsFlat); rows != nil {
		rhsFlat = rows
		rowViewReads.Add(1)
	}
	// out: [batch, lhsCross, rhsCross], the shape simplego gave the node.
	out = backend.NewBuffer(shapes.Make(dtype, p.batch, p.lhsCross, p.rhsCross))
	if out == nil {
		return nil, fmt.Errorf("fastgo: DotGeneral on a finalized backend")
	}
	outFlat, err := backend.BufferData(out)
	if err != nil {
		return nil, err
	}
	workers := backendParallelism(backend)
	switch dtype {
	case dtypes.Float32:
		maxima := rowMaxima(node, p.batch*p.lhsCross, p.rhsCross) // fuse.go: for the ReduceMax that follows
		if tile := deferredFor(node, inputs[0]); tile != nil {
			// fuse_expdot.go: the left operand is s, e = exp(s − m) made here
			defer tile.mu.Unlock()
			if maxima == nil && runExpRows(p, lhsShape, rhsShape, tile.s, rhsFlat.([]float32), outFlat.([]float32), workers, tile) {
				calls.Add(1)
				return out, nil
			}
			tile.materialize(lhsFlat.([]float32), tile.s, workers) // into s itself, or the Identity's output
		}
		done := maxima.rows(outFlat.([]float32), p.lhsCross, p.rhsCross)
		run(kernelF32, p, lhsShape, rhsShape, lhsFlat.([]float32), rhsFlat.([]float32), outFlat.([]float32), workers, done)
		kept = maxima.keep(out)
	case dtypes.Float64:
		run(kernelF64, p, lhsShape, rhsShape, lhsFlat.([]float64), rhsFlat.([]float64), outFlat.([]float64), workers, nil)
	}
	calls.Add(1)
	return out, nil
}

// run builds the operands' offset tables and calls groupRows (grouped decoding products:
// grouprows.go), gemv (few rows: gemv.go) or gemm; then done (if not nil) on every row of out
// (see gemmThen).
func run[T Float](kern microKernel[T], p dotParams, lhsShape, rhsShape shapes.Shape, lhs, rhs, out []T, workers int, done func(b, i0, i1 int)) {
	l := newOperand(lhs, lhsShape.Dimensions, p.lhsContractingAxes, p.lhsBatchAxes)
	r := newOperand(rhs, rhsShape.Dimensions, p.rhsContractingAxes, p.rhsBatchAxes)
	if groupRows(l, r, out, p.batch, p.lhsCross, p.rhsCross, p.contract, workers) || gemv(l, r, out, p.batch, p.lhsCross, p.rhsCross, p.contract, workers) ||
		p.rhsCross == 1 && gemv(r, l, out, p.batch, 1, p.lhsCross, p.contract, workers) { // [b, m, 1] = [b, 1, m]
		if done != nil {
			parallelFor(p.batch, 1, workers, func(lo, hi int) {
				for b := lo; b < hi; b++ {
					done(b, 0, p.lhsCross)
				}
			})
		}
		return
	}
	gemmThen(kern, l, r, out, p.batch, p.lhsCross, p.rhsCross, p.contract, workers, done)
}
