package fastgo

import (
	"slices"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// ScatterMax, ScatterMin, ScatterSum of whole rows: GoMLX's kernel walks every element through
// index iterators, 4–12 µs for the 3 rows of 64 values that models/smollm2's one-position cache
// update writes (two scatters per layer and per key/value: 120 nodes a token). When the
// indices [N, K] address the first K axes of a float32 operand and update N whole rows
// [N, rest…] (the operand's trailing axes), this executor combines each row in one loop with
// GoMLX's combine (Go's max, min, +: the same result), in the operand's own buffer when it is
// handed over. Any other scatter, and indices out of range, go to GoMLX's executor.

//go:linkname gomlxScatter github.com/gomlx/gomlx/backends/simplego.execScatter
func gomlxScatter(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

// scatterExecutor makes the executor of one of the three scatters (o: opScatterMax, …).
func scatterExecutor(o op, combine func(a, b float32) float32) nodeExecutor {
	return func(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
		if !enabled.Load() || len(inputs) != 3 {
			return fallback(o, gomlxScatter, backend, node, inputs, inputsOwned)
		}
		var shp [3]shapes.Shape
		var flats [3]any
		for i, in := range inputs {
			var err error
			if shp[i], flats[i], err = shapeAndData(backend, in); err != nil {
				return nil, err
			}
		}
		shape, idxShape, updShape := shp[0], shp[1], shp[2]
		if shape.DType != dtypes.Float32 || updShape.DType != dtypes.Float32 || idxShape.Rank() != 2 ||
			!rowScatter(node, shape.Dimensions, idxShape.Dimensions, updShape.Dimensions) {
			return fallback(o, gomlxScatter, backend, node, inputs, inputsOwned)
		}
		dims, k := shape.Dimensions, idxShape.Dimensions[1]
		rowLen := 1
		for _, d := range dims[k:] {
			rowLen *= d
		}
		rows, ok := rowOffsets(flats[1], dims[:k], rowLen)
		if !ok {
			return fallback(o, gomlxScatter, backend, node, inputs, inputsOwned)
		}
		out, dst := inputs[0], flats[0].([]float32)
		if inputsOwned[0] {
			inputs[0] = nil // handed over: updated in place
		} else {
			var flat any
			var err error
			if out, flat, err = newOutput(backend, shape); err != nil {
				return nil, err
			}
			dst = flat.([]float32)
			copy(dst, flats[0].([]float32))
		}
		scatterRows(dst, flats[2].([]float32), rows, rowLen, combine)
		opCalls[o].Add(1)
		return out, nil
	}
}

// scatterRows combines row i of upd [N, rowLen] into dst at offset rows[i], in index order
// (GoMLX's order: a repeated index combines its rows one after the other).
func scatterRows(dst, upd []float32, rows []int, rowLen int, combine func(a, b float32) float32) {
	for i, off := range rows {
		d, u := dst[off:off+rowLen], upd[i*rowLen:(i+1)*rowLen]
		for j := range d {
			d[j] = combine(d[j], u[j])
		}
	}
}

// rowOffsets: the flat offsets of the rows that indices [N, K] (int32 or int64) address in an
// operand [lead…, rest…] with K = len(lead) and rowLen values per row; false when an index is out
// of range (GoMLX's executor decides what that does).
func rowOffsets(idxFlat any, lead []int, rowLen int) ([]int, bool) {
	idx, ok := indexInts(idxFlat)
	if !ok {
		return nil, false
	}
	k := len(lead)
	rows := make([]int, len(idx)/k)
	for r := range rows {
		off := 0
		for a, d := range lead {
			v := idx[r*k+a]
			if v < 0 || v >= d {
				return nil, false
			}
			off = off*d + v
		}
		rows[r] = off * rowLen
	}
	return rows, true
}

// rowScatter reports whether the node's scatter parameters (simplego's unexported scatterNode,
// read with reflection) scatter whole rows: for an operand of shape dims, indices [N, K] and
// updates [N, dims[K:]…], the index vectors on indices' last axis address operand axes 0…K−1
// (inserted window axes), and the update window is updates' axes 1….
func rowScatter(node *simplego.Node, dims, idxDims, updDims []int) bool {
	p, ok := nodeStructOf(node, "scatterNode")
	if !ok {
		return false
	}
	axis, ok0 := p.int("indexVectorAxis")
	window, ok1 := p.ints("updateWindowAxes")
	inserted, ok2 := p.ints("insertedWindowAxes")
	toOperand, ok3 := p.ints("scatterAxesToOperandAxes")
	k := idxDims[1]
	if !ok0 || !ok1 || !ok2 || !ok3 || axis != 1 ||
		k < 1 || k > len(dims) || len(updDims) != 1+len(dims)-k || updDims[0] != idxDims[0] || !slices.Equal(updDims[1:], dims[k:]) {
		return false
	}
	first := func(n, from int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = from + i
		}
		return s
	}
	return slices.Equal(inserted, first(k, 0)) && slices.Equal(toOperand, first(k, 0)) && slices.Equal(window, first(len(dims)-k, 1))
}
