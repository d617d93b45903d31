package fastgo

import (
	"fmt"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Besides DotGeneral, the pure-Go backend's time in attention goes to ops that GoMLX v0.26
// computes element by element on one goroutine: Exp, the reductions of softmax, the broadcasts
// and binary ops around them, and the transposes of the head split/merge and of mhalib's
// Gather-based slicing (and that Gather itself); in a decoder's step, the Logistic of SiLU and
// the Slices that cut stacked projections; in an encoder's feed-forward layer, GELU's Erf. This package installs its own executors for those ops too (same
// mechanism, same priority, same off switch), each handling the common cases — float32/float64,
// the layouts attention produces — and handing anything else to GoMLX's executor.

// op indexes the per-op counters.
type op int

const (
	opTranspose op = iota
	opBroadcastInDim
	opExp
	opReduceMax
	opReduceSum
	opAdd
	opSub
	opMul
	opDiv
	opMax
	opMin
	opGather
	opIsFinite
	opWhere
	opIdentity
	opLogistic
	opSlice
	opScatterMax
	opScatterMin
	opScatterSum
	opConcatenate
	opErf
	numOps
)

var opTypes = [numOps]backends.OpType{
	opTranspose: backends.OpTypeTranspose, opBroadcastInDim: backends.OpTypeBroadcastInDim,
	opExp: backends.OpTypeExp, opReduceMax: backends.OpTypeReduceMax, opReduceSum: backends.OpTypeReduceSum,
	opAdd: backends.OpTypeAdd, opSub: backends.OpTypeSub, opMul: backends.OpTypeMul, opDiv: backends.OpTypeDiv,
	opMax: backends.OpTypeMax, opMin: backends.OpTypeMin, opGather: backends.OpTypeGather,
	opIsFinite: backends.OpTypeIsFinite, opWhere: backends.OpTypeWhere, opIdentity: backends.OpTypeIdentity,
	opLogistic: backends.OpTypeLogistic, opSlice: backends.OpTypeSlice,
	opScatterMax: backends.OpTypeScatterMax, opScatterMin: backends.OpTypeScatterMin, opScatterSum: backends.OpTypeScatterSum,
	opConcatenate: backends.OpTypeConcatenate, opErf: backends.OpTypeErf,
}

var opCalls, opFallbacks [numOps]atomic.Int64

// installElementwise installs the element-wise executors (called by init, when the GoMLX version
// is the one this package is written for).
func installElementwise() {
	if nodeFieldsErr != nil {
		lastFallback.Store(nodeFieldsErr.Error())
		return
	}
	executors := [numOps]nodeExecutor{
		opTranspose:      execTranspose,
		opBroadcastInDim: execBroadcastInDim,
		opExp:            execExp,
		opReduceMax:      execReduceMax,
		opReduceSum:      execReduceSum,
		opAdd:            binaryExecutor(opAdd, gomlxAdd),
		opSub:            binaryExecutor(opSub, gomlxSub),
		opMul:            binaryExecutor(opMul, gomlxMul),
		opDiv:            binaryExecutor(opDiv, gomlxDiv),
		opMax:            binaryExecutor(opMax, gomlxMax),
		opMin:            binaryExecutor(opMin, gomlxMin),
		opGather:         execGather,
		opIsFinite:       execIsFinite,
		opWhere:          execWhere,
		opIdentity:       execIdentity,
		opLogistic:       execLogistic,
		opSlice:          execSlice,
		opScatterMax:     scatterExecutor(opScatterMax, func(a, b float32) float32 { return max(a, b) }),
		opScatterMin:     scatterExecutor(opScatterMin, func(a, b float32) float32 { return min(a, b) }),
		opScatterSum:     scatterExecutor(opScatterSum, func(a, b float32) float32 { return a + b }),
		opConcatenate:    execConcatenate,
		opErf:            execErf,
	}
	for o, fn := range executors {
		if fn != nil {
			setNodeExecutor(opTypes[o], priorityUser, fn)
		}
	}
}

// OpCalls returns how many nodes of the given op type this package's executors computed since
// the process started (DotGeneral: Calls); 0 for op types it has no executor for.
func OpCalls(opType backends.OpType) int64 {
	if opType == backends.OpTypeDotGeneral {
		return Calls()
	}
	for o, t := range opTypes {
		if t == opType {
			return opCalls[o].Load()
		}
	}
	return 0
}

// Ops lists the op types this package computes on the pure-Go backend (each with a fallback to
// GoMLX's executor for the cases it does not handle); empty besides DotGeneral if the element-wise
// executors could not be installed (Status says why).
func Ops() []backends.OpType {
	ops := []backends.OpType{backends.OpTypeDotGeneral}
	if nodeFieldsErr == nil {
		ops = append(ops, opTypes[:]...)
	}
	return ops
}

func count(o op) { opCalls[o].Add(1) }

// fallback counts a node handed to GoMLX's executor and runs it.
func fallback(o op, gomlx nodeExecutor, backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	opFallbacks[o].Add(1)
	return gomlx(backend, node, inputs, inputsOwned)
}

// newOutput takes a buffer of the given shape from simplego's pool, and its flat data.
func newOutput(backend *simplego.Backend, shape shapes.Shape) (*simplego.Buffer, any, error) {
	out := backend.NewBuffer(shape)
	if out == nil {
		return nil, nil, fmt.Errorf("fastgo: %s on a finalized backend", shape)
	}
	flat, err := backend.BufferData(out)
	return out, flat, err
}
