package fastgo

import (
	"math"
	"slices"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
)

// ReduceMax and ReduceSum over one contiguous block of axes (softmax's last axis, a bias
// gradient's leading axes), float32 and float64: the operand is seen as [outer, reduced, inner]
// and the outer (and inner) ranges are cut over several goroutines. Maxima equal GoMLX's bit
// for bit (a maximum does not depend on the order; the vector loop defers ±0 and NaN to Go's
// max). Sums along rows of float32 (inner = 1: softmax's denominators) add in 64 vector lanes
// on AVX-512 or AVX2 (sumF32Vec, the same order on both; a profile of causal flash at L 4096 spent 7% of its CPU time in the one-by-one
// sum): within (n+1)·u·Σ|x| of the exact sum, as the tests check. Other sums run in GoMLX's
// order (each output adds its terms in increasing index) and equal GoMLX's bit for bit.
// Reductions over axes that are not contiguous go to GoMLX.

//go:linkname gomlxReduce github.com/gomlx/gomlx/backends/simplego.execReduce
func gomlxReduce(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

func execReduceMax(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	if out, ok, err := takeFusedMax(backend, node, inputs); err != nil || ok {
		return out, err // fuse.go: the GEMM before took the rows' maxima
	}
	return execReduce(opReduceMax, backend, node, inputs, inputsOwned)
}

func execReduceSum(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	if out, ok, err := takeFusedSum(backend, node, inputs); err != nil || ok {
		return out, err // fuse.go: the fused Sub before the Exp added the rows
	}
	return execReduce(opReduceSum, backend, node, inputs, inputsOwned)
}

func execReduce(o op, backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	axes, ok := nodeInts(node)
	if !ok || len(axes) == 0 || !enabled.Load() {
		return fallback(o, gomlxReduce, backend, node, inputs, inputsOwned)
	}
	inShape, err := backend.BufferShape(inputs[0])
	if err != nil {
		return nil, err
	}
	outer, reduced, inner, ok := reduceBlock(inShape.Dimensions, axes)
	if !ok {
		return fallback(o, gomlxReduce, backend, node, inputs, inputsOwned)
	}
	inFlat, err := backend.BufferData(inputs[0])
	if err != nil {
		return nil, err
	}
	switch inFlat.(type) {
	case []float32, []float64:
	default:
		return fallback(o, gomlxReduce, backend, node, inputs, inputsOwned)
	}
	out, outFlat, err := newOutput(backend, nodeShape(node))
	if err != nil {
		return nil, err
	}
	workers := backendParallelism(backend)
	switch in := inFlat.(type) {
	case []float32:
		reduce(o, in, outFlat.([]float32), outer, reduced, inner, workers)
	case []float64:
		reduce(o, in, outFlat.([]float64), outer, reduced, inner, workers)
	}
	count(o)
	return out, nil
}

// reduceBlock: if the reduced axes of an operand of shape dims, ignoring axes of size 1, are
// one contiguous block, the operand is [outer, reduced, inner] (products of the axes before,
// in and after the block) and ok is true.
func reduceBlock(dims, axes []int) (outer, reduced, inner int, ok bool) {
	outer, reduced, inner = 1, 1, 1
	state := 0 // 0 before the block, 1 in it, 2 after it
	for a, d := range dims {
		if d == 1 {
			continue
		}
		if slices.Contains(axes, a) {
			if state == 2 {
				return 0, 0, 0, false
			}
			state = 1
			reduced *= d
			continue
		}
		if state == 1 {
			state = 2
		}
		if state == 0 {
			outer *= d
		} else {
			inner *= d
		}
	}
	return outer, reduced, inner, true
}

// reduce: out[o, j] = reduce over r of in[o, r, j].
//
//	in: [outer, reduced, inner]   out: [outer, inner]
func reduce[T Float](o op, in, out []T, outer, reduced, inner, workers int) {
	init := T(0)
	if o == opReduceMax {
		init = T(math.Inf(-1))
	}
	if inner == 1 {
		parallelFor(outer, max(1, minParallelWork/max(reduced, 1)), workers, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				row := in[i*reduced : (i+1)*reduced]
				if o == opReduceMax {
					out[i] = maxRow(init, row)
				} else {
					out[i] = sumRow(row)
				}
			}
		})
		return
	}
	// Cut the output into pieces of whole rows or, with few rows, of parts of rows.
	piece := min(inner, max(64, minParallelWork/max(reduced, 1)))
	pieces := ceilDiv(inner, piece)
	parallelFor(outer*pieces, 1, workers, func(lo, hi int) {
		for item := lo; item < hi; item++ {
			i, j0 := item/pieces, (item%pieces)*piece
			j1 := min(j0+piece, inner)
			dst := out[i*inner+j0 : i*inner+j1]
			for j := range dst {
				dst[j] = init
			}
			for r := range reduced {
				src := in[(i*reduced+r)*inner+j0 : (i*reduced+r)*inner+j1]
				if o == opReduceMax {
					for j, v := range src {
						dst[j] = max(dst[j], v)
					}
				} else {
					for j, v := range src {
						dst[j] += v
					}
				}
			}
		}
	})
}

// maxRow is max(init, row...) with Go's rules (NaN wins, +0 above −0).
func maxRow[T Float](init T, row []T) T {
	if r, ok := any(row).([]float32); ok {
		if m, ok := maxF32Vec(float32(init), r); ok {
			return T(m)
		}
	}
	m := init
	for _, v := range row {
		m = max(m, v)
	}
	return m
}

// maxF32Go is the plain-Go maximum maxF32Vec defers to.
func maxF32Go(init float32, row []float32) float32 {
	m := init
	for _, v := range row {
		m = max(m, v)
	}
	return m
}

// zeroMax is max(init, row...) when that maximum is ±0 and nothing is NaN: +0 if init or any
// element is +0, else −0. (A masked decoding step's logits over a cache of zeros have the maximum
// 0 in every row: maxF32Go, one branchy max per element, took 5% of the step.)
func zeroMax(init float32, row []float32) float32 {
	if math.Float32bits(init) == 0 {
		return 0
	}
	for _, v := range row {
		if math.Float32bits(v) == 0 {
			return 0
		}
	}
	return float32(math.Copysign(0, -1))
}

// sumRow adds row: float32 rows in sumF32Vec's vector order where AVX-512 or AVX2 runs,
// otherwise in order from 0 (GoMLX's order).
func sumRow[T Float](row []T) T {
	if r, ok := any(row).([]float32); ok {
		if s, ok := sumF32Vec(r); ok {
			return T(s)
		}
	}
	var s T
	for _, v := range row {
		s += v
	}
	return s
}
