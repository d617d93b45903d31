package fastgo

import (
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
)

// Concatenate: GoMLX's kernel copies each input's blocks one after another on one goroutine.
// mhalib's causal flash on this backend joins its query blocks' outputs with it (flashrows'
// joinRows: 8 MiB at long causal, B1 L4096 h8 of 64) and the diagonal tile's row groups within
// each block — 2% of BenchmarkMHA/long_causal's CPU time, all of it on one core while the other
// waited. Here the copies (one per input and outer index, a run of the concatenated axis and
// every axis after it) are spread over goroutines; the values are the same: a copy.

//go:linkname gomlxConcatenate github.com/gomlx/gomlx/backends/simplego.execConcatenate
func gomlxConcatenate(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

func execConcatenate(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	axis, ok := nodeData(node).(int)
	outShape := nodeShape(node)
	if !ok || !enabled.Load() || len(inputs) == 0 || axis < 0 || axis >= outShape.Rank() {
		return fallback(opConcatenate, gomlxConcatenate, backend, node, inputs, inputsOwned)
	}
	outer, inner := 1, 1 // the output is [outer, concatenated axis, inner]
	for a, d := range outShape.Dimensions {
		switch {
		case a < axis:
			outer *= d
		case a > axis:
			inner *= d
		}
	}
	flats := make([]any, len(inputs))
	runs := make([]int, len(inputs)) // each input's elements per outer index
	for i, in := range inputs {
		shape, flat, err := shapeAndData(backend, in)
		if err != nil {
			return nil, err
		}
		if !movable(flat) || shape.Rank() != outShape.Rank() {
			return fallback(opConcatenate, gomlxConcatenate, backend, node, inputs, inputsOwned)
		}
		flats[i], runs[i] = flat, shape.Dimensions[axis]*inner
	}
	out, outFlat, err := newOutput(backend, outShape)
	if err != nil {
		return nil, err
	}
	switch dst := outFlat.(type) {
	case []float32:
		concatRuns(dst, flats, runs, outer, backendParallelism(backend))
	case []float64:
		concatRuns(dst, flats, runs, outer, backendParallelism(backend))
	case []int32:
		concatRuns(dst, flats, runs, outer, backendParallelism(backend))
	case []int64:
		concatRuns(dst, flats, runs, outer, backendParallelism(backend))
	case []bool:
		concatRuns(dst, flats, runs, outer, backendParallelism(backend))
	}
	count(opConcatenate)
	return out, nil
}

// concatRuns sets dst [outer, Σ runs] from the inputs srcs[i] [outer, runs[i]] (each a []T),
// one copy per (outer index, input), over up to workers goroutines.
func concatRuns[T any](dst []T, srcs []any, runs []int, outer, workers int) {
	total, starts := 0, make([]int, len(runs)) // starts[i]: input i's offset in a row of dst
	for i, r := range runs {
		starts[i] = total
		total += r
	}
	if total == 0 {
		return
	}
	parts := len(srcs)
	grain := max(1, minParallelWork/max(total/parts, 1))
	parallelFor(outer*parts, grain, workers, func(lo, hi int) {
		for item := lo; item < hi; item++ {
			o, i := item/parts, item%parts
			r := runs[i]
			copy(dst[o*total+starts[i]:][:r], srcs[i].([]T)[o*r:][:r])
		}
	})
}
