package fastgo

import (
	"reflect"
	"sync"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Slice: GoMLX's kernel walks the output element by element with an index iterator. A decoder
// step cuts its stacked projections and the halves of RoPE with a few hundred small slices
// (models/smollm2: 8 a layer); here a slice with unit strides is copied in contiguous runs — the
// innermost cut axis and every whole axis after it at once (the values are the same: a copy).
// Other strides go to GoMLX.

//go:linkname gomlxSlice github.com/gomlx/gomlx/backends/simplego.execSlice
func gomlxSlice(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

func execSlice(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	starts, ok := sliceStarts(node)
	inShape, inFlat, err := shapeAndData(backend, inputs[0])
	if err != nil {
		return nil, err
	}
	outShape := nodeShape(node)
	if !ok || !enabled.Load() || !movable(inFlat) || len(starts) != inShape.Rank() || outShape.Rank() != inShape.Rank() {
		return fallback(opSlice, gomlxSlice, backend, node, inputs, inputsOwned)
	}
	out, outFlat, err := newOutput(backend, outShape)
	if err != nil {
		return nil, err
	}
	in, dims := inShape.Dimensions, outShape.Dimensions
	switch src := inFlat.(type) {
	case []float32:
		sliceRuns(outFlat.([]float32), src, in, dims, starts)
	case []float64:
		sliceRuns(outFlat.([]float64), src, in, dims, starts)
	case []int32:
		sliceRuns(outFlat.([]int32), src, in, dims, starts)
	case []int64:
		sliceRuns(outFlat.([]int64), src, in, dims, starts)
	case []bool:
		sliceRuns(outFlat.([]bool), src, in, dims, starts)
	}
	count(opSlice)
	return out, nil
}

// sliceRuns copies the block of src [in...] that starts at starts and has dims into dst
// (row-major, unit strides): one copy per run of the innermost cut axis and the whole axes
// after it.
func sliceRuns[T any](dst, src []T, in, dims, starts []int) {
	if len(dst) == 0 {
		return
	}
	strides := rowMajorStrides(in)
	k, run := len(in), 1 // axes k… are copied in one run
	for k > 0 && dims[k-1] == in[k-1] {
		k--
		run *= in[k]
	}
	if k > 0 {
		k--
		run *= dims[k]
	}
	first := 0
	for a := range in {
		first += starts[a] * strides[a]
	}
	idx := make([]int, k) // position over the outer axes 0 … k−1
	for o := 0; o < len(dst); o += run {
		off := first
		for a, i := range idx {
			off += i * strides[a]
		}
		copy(dst[o:o+run], src[off:off+run])
		for a := k - 1; a >= 0; a-- { // next outer position, last axis fastest
			if idx[a]++; idx[a] < dims[a] {
				break
			}
			idx[a] = 0
		}
	}
}

// sliceStarts reads a Slice node's start indices (simplego's sliceNode{starts, limits,
// strides}, through field indices looked up once); false unless every stride is 1 or the
// fields are not there (a GoMLX other than v0.26.0).
func sliceStarts(node *simplego.Node) ([]int, bool) {
	v := reflect.ValueOf(nodeData(node))
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	v = v.Elem()
	idx := sliceFieldIndices(v.Type())
	if idx[0] < 0 || idx[1] < 0 {
		return nil, false
	}
	strides, ok := intsField(v.Field(idx[1]))
	for _, s := range strides {
		ok = ok && s == 1
	}
	if !ok {
		return nil, false
	}
	return intsField(v.Field(idx[0])) // the node's own slice: read only
}

// sliceFieldIndices is the index of the []int fields "starts" and "strides" of t, −1 where
// missing; looked up once per type.
func sliceFieldIndices(t reflect.Type) [2]int {
	if idx, ok := sliceFields.Load(t); ok {
		return idx.([2]int)
	}
	var idx [2]int
	for k, name := range []string{"starts", "strides"} {
		idx[k] = -1
		if f, ok := t.FieldByName(name); ok && len(f.Index) == 1 && f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Int {
			idx[k] = f.Index[0]
		}
	}
	sliceFields.Store(t, idx)
	return idx
}

var sliceFields sync.Map // reflect.Type → [2]int

// shapeAndData is a buffer's shape and flat data.
func shapeAndData(backend *simplego.Backend, b *simplego.Buffer) (shapes.Shape, any, error) {
	shape, err := backend.BufferShape(b)
	if err != nil {
		return shape, nil, err
	}
	flat, err := backend.BufferData(b)
	return shape, flat, err
}
