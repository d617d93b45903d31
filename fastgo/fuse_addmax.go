package fastgo

import (
	"math"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
)

// A mask's bias and the rows' maxima in one pass. mhalib's plain causal attention on this
// backend (maskbias.go, fastgo's BenchmarkMHA/seed003_causal) adds a bias of 0 and −inf
// [1, 1, Lq, Lk] to the scores [B, h, Lq, Lk] and takes each row's maximum for the softmax: the
// Add reads and writes the scores and the ReduceMax reads them again (the GEMM's own maxima,
// fuse.go, are those of the scores before the bias). Here the Add executor, when its node adds
// such a bias (every axis but the last two of size 1) and one use of its output is a ReduceMax
// over the last axis, takes each row's maximum right after adding it, while it is in L1, and
// the ReduceMax returns them (takeFusedMax): the same vector addition on the same runs as the
// Add apart (binaryVV) and the same maxRow as the ReduceMax executor's, bit for bit. Op by op
// (BenchmarkMHA/seed003_causal, "ops_sequential", MHALAB_OPPROF): the ReduceMax's 1.5 ms a pass
// became 0.02 ms and the Adds' 5.5 ms 6.2 ms; the diagonal tiles of causal flash
// (BenchmarkMHA/long_causal) likewise, ReduceMax 2.2 ms → 0.15 ms.

// execFusedAddMax computes Add node add with its rows' maxima when the shapes and the graph
// allow; ok false: not fused, nothing done.
func execFusedAddMax(backend *simplego.Backend, add *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (out *simplego.Buffer, ok bool, err error) {
	if !enabled.Load() || graphFieldsErr != nil || !fuseOn.Load() || len(inputs) != 2 {
		return nil, false, nil
	}
	outShape := nodeShape(add)
	rank := outShape.Rank()
	if rank < 2 || outShape.Size() < fuseMinElems || outShape.Dimensions[rank-1] < 2 {
		return nil, false, nil
	}
	sShape, err := backend.BufferShape(inputs[0])
	if err != nil {
		return nil, false, err
	}
	bShape, err := backend.BufferShape(inputs[1])
	if err != nil {
		return nil, false, err
	}
	if !sShape.Equal(outShape) || bShape.Rank() != rank {
		return nil, false, nil
	}
	for a, d := range bShape.Dimensions {
		if a < rank-2 && d != 1 || a >= rank-2 && d != outShape.Dimensions[a] {
			return nil, false, nil
		}
	}
	s, ok1 := mustFlat[float32](backend, inputs[0])
	bias, ok2 := mustFlat[float32](backend, inputs[1])
	if !ok1 || !ok2 {
		return nil, false, nil
	}
	maxNode := addMaxPlan(add, rank)
	if maxNode == nil {
		return nil, false, nil
	}
	out, e, err := overFirst(backend, inputs, inputsOwned, s, outShape)
	if err != nil {
		return nil, false, err
	}
	cols, tileRows := outShape.Dimensions[rank-1], outShape.Dimensions[rank-2]
	tile := &rowMaxTile{max: maxNode, maxima: make([]float32, len(s)/cols)}
	parallelFor(len(tile.maxima), max(1, minParallelWork/cols), backendParallelism(backend), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			dst := e[r*cols : (r+1)*cols]
			b := r % tileRows
			binaryVV(opAdd, dst, s[r*cols:(r+1)*cols], bias[b*cols:(b+1)*cols])
			tile.maxima[r] = maxRow(float32(math.Inf(-1)), dst)
		}
	})
	tile.keep(out)
	count(opAdd)
	return out, true, nil
}

// addMaxPlan returns the ReduceMax over the last axis among the uses of Add node add (of rank
// rank), or nil (none, or add is an output of its graph).
func addMaxPlan(add *simplego.Node, rank int) *simplego.Node {
	nodes, outputs := graphOf(add)
	if isOutput(add, outputs) {
		return nil
	}
	return lastAxisReduce(add, nodes, backends.OpTypeReduceMax, rank)
}
