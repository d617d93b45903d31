package fastgo

import (
	"math"
	"sync/atomic"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Add, Sub, Mul, Div, Max and Min for float32 and float64: equal shapes, a scalar on either
// side, or broadcasting along axes of size 1 — walked as runs (stridedPlan) of vector ⊙ vector,
// vector ⊙ scalar or scalar ⊙ vector, over several goroutines. Each element is the same one
// IEEE operation (or Go's max/min) as in GoMLX's kernel: the results are equal bit for bit. An
// operand whose buffer simplego hands over (its last use) and that has the output's shape
// becomes the output; where the other operand leaves every value unchanged (x − (+0), x·1, …:
// identityOperand) that operand is the output as it is, without a pass (a signalling NaN then
// stays signalling).

//go:linkname gomlxAdd github.com/gomlx/gomlx/backends/simplego.execAdd
func gomlxAdd(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

//go:linkname gomlxSub github.com/gomlx/gomlx/backends/simplego.execSub
func gomlxSub(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

//go:linkname gomlxMul github.com/gomlx/gomlx/backends/simplego.execMul
func gomlxMul(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

//go:linkname gomlxDiv github.com/gomlx/gomlx/backends/simplego.execDiv
func gomlxDiv(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

//go:linkname gomlxMax github.com/gomlx/gomlx/backends/simplego.execMax
func gomlxMax(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

//go:linkname gomlxMin github.com/gomlx/gomlx/backends/simplego.execMin
func gomlxMin(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

// identityOperandCalls counts the ops whose output was an operand handed over as it is
// (identityOperand).
var identityOperandCalls atomic.Int64

// identityOperand returns k when operand k is the output as it is and its buffer is handed over
// (inputsOwned[k], the output's shape), the other operand being one element that leaves every
// value of it unchanged: x − (+0), x + (−0) or (−0) + x, x·1 or 1·x, x/1. Then the output is
// that buffer, with no pass over it; else -1. Each holds bit for bit for every x, −0 and
// infinities included (x − (−0) and x + (+0) do not: they turn −0 into +0), and for NaN but
// for a signalling NaN, which stays signalling instead of being made quiet. The value is read
// when the op runs: mhalib's FlashAttention subtracts a +0 that only the graph's data makes
// (flashgradroute.go's anchor), which cost a pass over the whole output [B, h, L, dv] (fastgo's
// BenchmarkMHA, MHALAB_OPPROF: llm causal 1.1 ms of ~220 a pass).
func identityOperand(o op, owned []bool, shps [2]shapes.Shape, flats [2]any, outShape shapes.Shape) int {
	for k := range 2 {
		other := 1 - k
		if !owned[k] || !shps[k].Equal(outShape) || shps[other].Size() != 1 {
			continue
		}
		var bits uint64
		switch f := flats[other].(type) {
		case []float32:
			bits = uint64(math.Float32bits(f[0]))
		case []float64:
			bits = math.Float64bits(f[0])
		default:
			return -1
		}
		_, f64 := flats[other].([]float64)
		negZero, one := uint64(1)<<31, uint64(math.Float32bits(1))
		if f64 {
			negZero, one = uint64(1)<<63, math.Float64bits(1)
		}
		switch {
		case o == opSub && k == 0 && bits == 0,
			o == opAdd && bits == negZero,
			o == opMul && bits == one,
			o == opDiv && k == 0 && bits == one:
			return k
		}
	}
	return -1
}

func binaryExecutor(o op, gomlx nodeExecutor) nodeExecutor {
	return func(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
		if o == opSub {
			if out, ok, err := execFusedSub(backend, node, inputs, inputsOwned); err != nil || ok {
				return out, err // fuse.go: exp(s − m) for the Exp that follows
			}
		}
		if o == opAdd {
			if out, ok, err := execFusedAddMax(backend, node, inputs, inputsOwned); err != nil || ok {
				return out, err // fuse_addmax.go: the rows' maxima for the ReduceMax that follows
			}
		}
		out, ok, err := execBinary(o, backend, node, inputs, inputsOwned)
		if !ok && err == nil {
			out, err = fallback(o, gomlx, backend, node, inputs, inputsOwned)
		}
		dropFused(out) // nothing fused into this buffer now
		dropMaxima(out)
		return out, err
	}
}

// execBinary computes the node, or returns ok = false for GoMLX to do it.
func execBinary(o op, backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (out *simplego.Buffer, ok bool, err error) {
	if !enabled.Load() || len(inputs) != 2 {
		return nil, false, nil
	}
	outShape := nodeShape(node)
	var (
		shps  [2]shapes.Shape
		flats [2]any
	)
	small := outShape.Size() < minParallelWork // and no broadcast but of a scalar: see below
	for k, in := range inputs {
		if shps[k], err = backend.BufferShape(in); err != nil {
			return nil, false, err
		}
		if flats[k], err = backend.BufferData(in); err != nil {
			return nil, false, err
		}
		small = small && (shps[k].Size() == 1 || shps[k].Equal(outShape))
	}
	switch flats[0].(type) {
	case []float32:
		if _, same := flats[1].([]float32); !same {
			return nil, false, nil
		}
	case []float64:
		if _, same := flats[1].([]float64); !same {
			return nil, false, nil
		}
	default:
		return nil, false, nil
	}
	if k := identityOperand(o, inputsOwned, shps, flats, outShape); k >= 0 {
		out = inputs[k]
		inputs[k] = nil
		identityOperandCalls.Add(1)
		count(o)
		return out, true, nil
	}
	var (
		plan         stridedPlan
		rowsR, rowsC int
		rowKinds     [2][2]rowKind
		rows         bool
	)
	workers := backendParallelism(backend)
	if !small && shps[0].Rank() == outShape.Rank() && shps[1].Rank() == outShape.Rank() {
		// a small broadcast, or a large one of many rows: as rows where it is one (binary_rows.go)
		rowsR, rowsC, rowKinds, rows = rowsOf(outShape.Dimensions, [2][]int{shps[0].Dimensions, shps[1].Dimensions})
		rows = rows && (outShape.Size() < minParallelWork || rowsR >= rowsMinPerWorker*workers)
	}
	if !small && !rows {
		plan = stridedPlan{dims: outShape.Dimensions, n: 2}
		for k, shape := range shps {
			switch {
			case shape.Size() == 1:
				plan.strides[k] = make([]int, outShape.Rank())
			case shape.Rank() == outShape.Rank():
				plan.strides[k] = broadcastStrides(shape.Dimensions, outShape.Dimensions, identityAxes(shape.Rank()))
			default:
				return nil, false, nil
			}
		}
		plan = plan.simplify()
		if !plan.innerOK() {
			return nil, false, nil
		}
	}
	// The output: an operand handed over with the output's shape, else a new buffer.
	var outFlat any
	for k, in := range inputs {
		if !inputsOwned[k] {
			continue
		}
		if shps[k].Equal(outShape) {
			out, outFlat = in, flats[k]
			inputs[k] = nil
			break
		}
	}
	if out == nil {
		if out, outFlat, err = newOutput(backend, outShape); err != nil {
			return nil, false, err
		}
	}
	switch a := flats[0].(type) {
	case []float32:
		if small {
			binarySmall(o, a, flats[1].([]float32), outFlat.([]float32))
		} else if rows {
			binaryRows(o, a, flats[1].([]float32), outFlat.([]float32), rowsR, rowsC, rowKinds, workers)
		} else {
			binary(o, plan, a, flats[1].([]float32), outFlat.([]float32), workers)
		}
	case []float64:
		if small {
			binarySmall(o, a, flats[1].([]float64), outFlat.([]float64))
		} else if rows {
			binaryRows(o, a, flats[1].([]float64), outFlat.([]float64), rowsR, rowsC, rowKinds, workers)
		} else {
			binary(o, plan, a, flats[1].([]float64), outFlat.([]float64), workers)
		}
	}
	count(o)
	return out, true, nil
}

// binarySmall is binary for an output of fewer than minParallelWork elements (one goroutine)
// whose operands each have its shape or one element: no plan, strides or walker to build — a
// decoding step runs ~600 such ops on vectors of a few hundred elements, where building them
// took longer than the arithmetic.
func binarySmall[T Float](o op, a, b, out []T) {
	switch {
	case len(a) == len(out) && len(b) == len(out):
		binaryVV(o, out, a, b)
	case len(a) == len(out):
		binaryVS(o, out, a, b[0])
	case len(b) == len(out):
		binarySV(o, out, a[0], b)
	default: // every one a single element
		binaryVV(o, out, a[:1], b[:1])
	}
}

func identityAxes(n int) []int {
	axes := make([]int, n)
	for i := range axes {
		axes[i] = i
	}
	return axes
}

// binary: out = a ⊙ b over the plan (operand 0 is a, 1 is b).
func binary[T Float](o op, plan stridedPlan, a, b, out []T, workers int) {
	last := len(plan.dims) - 1
	aVec, bVec := plan.strides[0][last] == 1, plan.strides[1][last] == 1
	plan.forRuns(workers, func(start, length int, off [2]int) {
		dst := out[start : start+length]
		switch {
		case aVec && bVec:
			binaryVV(o, dst, a[off[0]:off[0]+length], b[off[1]:off[1]+length])
		case aVec:
			binaryVS(o, dst, a[off[0]:off[0]+length], b[off[1]])
		case bVec:
			binarySV(o, dst, a[off[0]], b[off[1]:off[1]+length])
		default:
			var v [1]T
			binaryVV(o, v[:], a[off[0]:off[0]+1], b[off[1]:off[1]+1])
			for i := range dst {
				dst[i] = v[0]
			}
		}
	})
}

func binaryVV[T Float](o op, dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	if d, ok := any(dst).([]float32); ok && binaryF32Vec(o, d, any(a).([]float32), any(b).([]float32), true, false) {
		return
	}
	switch o {
	case opAdd:
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	case opSub:
		for i := range dst {
			dst[i] = a[i] - b[i]
		}
	case opMul:
		for i := range dst {
			dst[i] = a[i] * b[i]
		}
	case opDiv:
		for i := range dst {
			dst[i] = a[i] / b[i]
		}
	case opMax:
		for i := range dst {
			dst[i] = max(a[i], b[i])
		}
	case opMin:
		for i := range dst {
			dst[i] = min(a[i], b[i])
		}
	}
}

func binaryVS[T Float](o op, dst, a []T, b T) {
	a = a[:len(dst)]
	if d, ok := any(dst).([]float32); ok && binaryF32Vec(o, d, any(a).([]float32), []float32{float32(b)}, false, false) {
		return
	}
	switch o {
	case opAdd:
		for i := range dst {
			dst[i] = a[i] + b
		}
	case opSub:
		for i := range dst {
			dst[i] = a[i] - b
		}
	case opMul:
		for i := range dst {
			dst[i] = a[i] * b
		}
	case opDiv:
		for i := range dst {
			dst[i] = a[i] / b
		}
	case opMax:
		for i := range dst {
			dst[i] = max(a[i], b)
		}
	case opMin:
		for i := range dst {
			dst[i] = min(a[i], b)
		}
	}
}

func binarySV[T Float](o op, dst []T, a T, b []T) {
	b = b[:len(dst)]
	if d, ok := any(dst).([]float32); ok && binaryF32Vec(o, d, any(b).([]float32), []float32{float32(a)}, false, true) {
		return
	}
	switch o {
	case opAdd:
		for i := range dst {
			dst[i] = a + b[i]
		}
	case opSub:
		for i := range dst {
			dst[i] = a - b[i]
		}
	case opMul:
		for i := range dst {
			dst[i] = a * b[i]
		}
	case opDiv:
		for i := range dst {
			dst[i] = a / b[i]
		}
	case opMax:
		for i := range dst {
			dst[i] = max(a, b[i])
		}
	case opMin:
		for i := range dst {
			dst[i] = min(a, b[i])
		}
	}
}
