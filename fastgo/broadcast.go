package fastgo

import (
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
)

// BroadcastInDim (and the implicit broadcasting of the binary ops, binary.go): the output is
// walked in row-major order while each operand is read with its own strides, 0 along the axes
// it is broadcast on. stridedPlan merges the axes that can be walked as one, so that the last
// axis is a run that each operand either reads contiguously (stride 1) or repeats (stride 0):
// copies and fills instead of GoMLX's element-by-element index iterator.

//go:linkname gomlxBroadcastInDim github.com/gomlx/gomlx/backends/simplego.execBroadcastInDim
func gomlxBroadcastInDim(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

// stridedPlan is a row-major output of shape dims, read from up to 2 operands with strides[k]
// (the output's own strides are row-major).
type stridedPlan struct {
	dims    []int
	strides [2][]int
	n       int // operands
}

// broadcastStrides: the strides, over an output of shape outDims, of an operand of shape
// inDims whose axis i is output axis axes[i] (0 where the operand's axis has size 1 or the
// output axis is not one of the operand's).
func broadcastStrides(inDims, outDims, axes []int) []int {
	in := rowMajorStrides(inDims)
	s := make([]int, len(outDims))
	for i, a := range axes {
		if inDims[i] == outDims[a] {
			s[a] = in[i]
		}
	}
	return s
}

// simplify drops the output axes of size 1 and merges neighbouring axes that every operand
// walks as one (stride[a] = stride[a+1]·dims[a+1], which includes both being 0). A scalar output
// becomes one axis of size 1.
func (p stridedPlan) simplify() stridedPlan {
	var q stridedPlan
	q.n = p.n
	for a, d := range p.dims {
		if d == 1 {
			continue
		}
		last := len(q.dims) - 1
		if last >= 0 {
			merge := true
			for k := range p.n {
				if q.strides[k][last] != p.strides[k][a]*d {
					merge = false
				}
			}
			if merge {
				q.dims[last] *= d
				for k := range p.n {
					q.strides[k][last] = p.strides[k][a]
				}
				continue
			}
		}
		q.dims = append(q.dims, d)
		for k := range p.n {
			q.strides[k] = append(q.strides[k], p.strides[k][a])
		}
	}
	if len(q.dims) == 0 {
		q.dims = []int{1}
		for k := range p.n {
			q.strides[k] = []int{0}
		}
	}
	return q
}

// innerOK reports whether every operand reads the last axis with stride 0 or 1.
func (p stridedPlan) innerOK() bool {
	last := len(p.dims) - 1
	for k := range p.n {
		if s := p.strides[k][last]; s != 0 && s != 1 {
			return false
		}
	}
	return true
}

// size is the number of output elements.
func (p stridedPlan) size() int {
	n := 1
	for _, d := range p.dims {
		n *= d
	}
	return n
}

// forRuns calls fn for pieces of output runs, over several goroutines: the output elements
// [start, start+length), all in one run of the last axis, and each operand's offset of the
// first of them (operands with stride 0 on the last axis read that one element for all).
func (p stridedPlan) forRuns(workers int, fn func(start, length int, off [2]int)) {
	last := len(p.dims) - 1
	run := p.dims[last]
	total := p.size()
	outer := p.dims[:last]
	var st [3][]int
	for k := range p.n {
		st[k] = p.strides[k][:last]
	}
	parallelFor(total, minParallelWork, workers, func(lo, hi int) {
		row := lo / run
		w := newWalker(outer, st, row)
		for pos := lo; pos < hi; {
			col := pos - row*run
			length := min(run-col, hi-pos)
			var off [2]int
			for k := range p.n {
				off[k] = w.off[k] + col*p.strides[k][last]
			}
			fn(pos, length, off)
			pos += length
			row++
			w.next()
		}
	})
}

func execBroadcastInDim(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	axes, ok := nodeInts(node)
	if !ok || !enabled.Load() {
		return fallback(opBroadcastInDim, gomlxBroadcastInDim, backend, node, inputs, inputsOwned)
	}
	inShape, err := backend.BufferShape(inputs[0])
	if err != nil {
		return nil, err
	}
	inFlat, err := backend.BufferData(inputs[0])
	if err != nil {
		return nil, err
	}
	outShape := nodeShape(node)
	if !movable(inFlat) || len(axes) != inShape.Rank() {
		return fallback(opBroadcastInDim, gomlxBroadcastInDim, backend, node, inputs, inputsOwned)
	}
	plan := stridedPlan{dims: outShape.Dimensions, n: 1}
	plan.strides[0] = broadcastStrides(inShape.Dimensions, outShape.Dimensions, axes)
	plan = plan.simplify()
	if !plan.innerOK() {
		return fallback(opBroadcastInDim, gomlxBroadcastInDim, backend, node, inputs, inputsOwned)
	}
	out, outFlat, err := newOutput(backend, outShape)
	if err != nil {
		return nil, err
	}
	workers := backendParallelism(backend)
	switch in := inFlat.(type) {
	case []float32:
		broadcast(plan, in, outFlat.([]float32), workers)
	case []float64:
		broadcast(plan, in, outFlat.([]float64), workers)
	case []int32:
		broadcast(plan, in, outFlat.([]int32), workers)
	case []int64:
		broadcast(plan, in, outFlat.([]int64), workers)
	case []bool:
		broadcast(plan, in, outFlat.([]bool), workers)
	}
	count(opBroadcastInDim)
	return out, nil
}

func broadcast[T any](plan stridedPlan, in, out []T, workers int) {
	contiguous := plan.strides[0][len(plan.dims)-1] == 1
	plan.forRuns(workers, func(start, length int, off [2]int) {
		dst := out[start : start+length]
		if contiguous {
			copy(dst, in[off[0]:off[0]+length])
			return
		}
		v := in[off[0]]
		for i := range dst {
			dst[i] = v
		}
	})
}
