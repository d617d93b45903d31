package fastgo

import (
	"slices"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
)

// Gather: GoMLX's kernel copies the gathered slices one element (4 bytes) at a time. mhalib's
// slicing on the pure-Go backend is Gather(x, indices [N…, 1]) taking whole slices x[i] along
// the first axis; this executor copies each slice in one go, over several goroutines (the
// result is exact). Any other gather (other axes, partial slices) goes to GoMLX.

//go:linkname gomlxGather github.com/gomlx/gomlx/backends/simplego.execGather
func gomlxGather(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

// rowGather reports whether the node's gather parameters (simplego's unexported gatherNode, read
// with reflection) take whole slices along operand axis 0 with one index per output row, for
// an operand of shape dims and start indices of shape idxDims.
func rowGather(node *simplego.Node, dims, idxDims []int) bool {
	p, ok := nodeStructOf(node, "gatherNode")
	if !ok {
		return false
	}
	axis, ok0 := p.int("indexVectorAxis")
	startIndexMap, ok1 := p.ints("startIndexMap")
	collapsed, ok2 := p.ints("collapsedSlicesAxes")
	sliceSizes, ok3 := p.ints("sliceSizes")
	offsetAxes, ok4 := p.ints("offsetOutputAxes")
	r := len(idxDims)
	if !ok0 || !ok1 || !ok2 || !ok3 || !ok4 || r == 0 || len(dims) == 0 ||
		axis != r-1 || idxDims[r-1] != 1 || !slices.Equal(startIndexMap, []int{0}) || !slices.Equal(collapsed, []int{0}) ||
		len(sliceSizes) != len(dims) || sliceSizes[0] != 1 || !slices.Equal(sliceSizes[1:], dims[1:]) || len(offsetAxes) != len(dims)-1 {
		return false
	}
	for i, a := range offsetAxes {
		if a != r-1+i { // the slice's axes come after the index axes in the output
			return false
		}
	}
	return true
}

func execGather(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	if !enabled.Load() || len(inputs) != 2 {
		return fallback(opGather, gomlxGather, backend, node, inputs, inputsOwned)
	}
	shape, err := backend.BufferShape(inputs[0])
	if err != nil {
		return nil, err
	}
	idxShape, err := backend.BufferShape(inputs[1])
	if err != nil {
		return nil, err
	}
	flat, err := backend.BufferData(inputs[0])
	if err != nil {
		return nil, err
	}
	idxFlat, err := backend.BufferData(inputs[1])
	if err != nil {
		return nil, err
	}
	idx, ok := indexInts(idxFlat)
	if !ok {
		return fallback(opGather, gomlxGather, backend, node, inputs, inputsOwned)
	}
	if !movable(flat) || !rowGather(node, shape.Dimensions, idxShape.Dimensions) {
		return fallback(opGather, gomlxGather, backend, node, inputs, inputsOwned)
	}
	// Out-of-range indices are clamped, as GoMLX (and XLA) do.
	for i, v := range idx {
		idx[i] = max(0, min(v, shape.Dimensions[0]-1))
	}
	out, outFlat, err := newOutput(backend, nodeShape(node))
	if err != nil {
		return nil, err
	}
	row := shape.Size() / shape.Dimensions[0]
	if from, ok := consecutive(idx); ok && lazyGatherOK(backend, node, inputsOwned[0]) {
		// gatherview.go: the products that read out read these rows where they are
		var rows any
		switch x := flat.(type) {
		case []float32:
			rows = x[from*row : (from+len(idx))*row]
		case []float64:
			rows = x[from*row : (from+len(idx))*row]
		}
		if rows != nil && lazyRows(out, outFlat, rows) {
			count(opGather)
			return out, nil
		}
	}
	workers := backendParallelism(backend)
	switch x := flat.(type) {
	case []float32:
		gatherRows(x, outFlat.([]float32), idx, row, workers)
	case []float64:
		gatherRows(x, outFlat.([]float64), idx, row, workers)
	case []int32:
		gatherRows(x, outFlat.([]int32), idx, row, workers)
	case []int64:
		gatherRows(x, outFlat.([]int64), idx, row, workers)
	case []bool:
		gatherRows(x, outFlat.([]bool), idx, row, workers)
	}
	count(opGather)
	return out, nil
}

// gatherRows: out[i] = x[idx[i]] for rows of `row` elements.
func gatherRows[T any](x, out []T, idx []int, row, workers int) {
	parallelFor(len(idx), max(1, minParallelWork/max(row, 1)), workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			copy(out[i*row:(i+1)*row], x[idx[i]*row:(idx[i]+1)*row])
		}
	})
}

// consecutive returns idx[0] and true when idx is idx[0], idx[0]+1, … (at least one index).
func consecutive(idx []int) (int, bool) {
	if len(idx) == 0 {
		return 0, false
	}
	for i, v := range idx {
		if v != idx[0]+i {
			return 0, false
		}
	}
	return idx[0], true
}

// indexInts is an index operand's int32 or int64 data as ints (false: another dtype).
func indexInts(flat any) ([]int, bool) {
	switch ix := flat.(type) {
	case []int32:
		idx := make([]int, len(ix))
		for i, v := range ix {
			idx[i] = int(v)
		}
		return idx, true
	case []int64:
		idx := make([]int, len(ix))
		for i, v := range ix {
			idx[i] = int(v)
		}
		return idx, true
	}
	return nil, false
}
