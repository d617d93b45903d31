package fastgo

import (
	le "encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe" // go:linkname, and bools as bytes

	"github.com/gomlx/gomlx/backends/simplego"
)

// IsFinite, Where and Identity: mhalib's softmax keeps a gradient path for masked logits with
// Where(IsFinite(logits), logits, 0) and StopGradient (an Identity that copies) over the whole
// score tensor, in the forward pass too. GoMLX computes these on one goroutine; here they are
// cut over several (the results are exact: a test, a selection, a copy). Where handles a
// condition of the output's shape with branches of the output's shape or scalars (a scalar
// condition, and other dtypes than Transpose's, go to GoMLX).

//go:linkname gomlxIsFinite github.com/gomlx/gomlx/backends/simplego.execIsFinite
func gomlxIsFinite(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

//go:linkname gomlxWhere github.com/gomlx/gomlx/backends/simplego.execWhere
func gomlxWhere(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

//go:linkname gomlxIdentity github.com/gomlx/gomlx/backends/simplego.execIdentity
func gomlxIdentity(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

func execIsFinite(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	if !enabled.Load() {
		return fallback(opIsFinite, gomlxIsFinite, backend, node, inputs, inputsOwned)
	}
	flat, err := backend.BufferData(inputs[0])
	if err != nil {
		return nil, err
	}
	switch flat.(type) {
	case []float32, []float64:
	default:
		return fallback(opIsFinite, gomlxIsFinite, backend, node, inputs, inputsOwned)
	}
	out, outFlat, err := newOutput(backend, nodeShape(node))
	if err != nil {
		return nil, err
	}
	dst := outFlat.([]bool)
	workers := backendParallelism(backend)
	switch x := flat.(type) {
	case []float32:
		isFinite(x, dst, workers)
	case []float64:
		isFinite(x, dst, workers)
	}
	count(opIsFinite)
	return out, nil
}

// isFinite: dst[i] = x[i] is neither ±Inf nor NaN (x − x is 0 exactly for the finite values).
func isFinite[T Float](x []T, dst []bool, workers int) {
	parallelFor(len(x), minParallelWork, workers, func(lo, hi int) {
		for i, v := range x[lo:hi] {
			dst[lo+i] = v-v == 0
		}
	})
}

func execIdentity(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	if out, ok, err := takeDeferredIdentity(backend, node, inputs, inputsOwned); err != nil || ok {
		return out, err // fuse_expdot.go: e is made by the DotGeneral after
	}
	if !enabled.Load() || inputsOwned[0] {
		// Handed over: GoMLX returns the buffer itself, no copy.
		return fallback(opIdentity, gomlxIdentity, backend, node, inputs, inputsOwned)
	}
	flat, err := backend.BufferData(inputs[0])
	if err != nil {
		return nil, err
	}
	if !movable(flat) {
		return fallback(opIdentity, gomlxIdentity, backend, node, inputs, inputsOwned)
	}
	shape, err := backend.BufferShape(inputs[0])
	if err != nil {
		return nil, err
	}
	out, outFlat, err := newOutput(backend, shape)
	if err != nil {
		return nil, err
	}
	workers := backendParallelism(backend)
	switch x := flat.(type) {
	case []float32:
		parallelCopy(outFlat.([]float32), x, workers)
	case []float64:
		parallelCopy(outFlat.([]float64), x, workers)
	case []int32:
		parallelCopy(outFlat.([]int32), x, workers)
	case []int64:
		parallelCopy(outFlat.([]int64), x, workers)
	case []bool:
		parallelCopy(outFlat.([]bool), x, workers)
	}
	count(opIdentity)
	return out, nil
}

func parallelCopy[T any](dst, src []T, workers int) {
	parallelFor(len(src), minParallelWork, workers, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}

func execWhere(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	if !enabled.Load() || len(inputs) != 3 {
		return fallback(opWhere, gomlxWhere, backend, node, inputs, inputsOwned)
	}
	outShape := nodeShape(node)
	var flats [3]any
	var scalar [3]bool
	for k, in := range inputs {
		shape, err := backend.BufferShape(in)
		if err != nil {
			return nil, err
		}
		switch {
		case shape.Equal(outShape) || (k == 0 && slicesEqual(shape.Dimensions, outShape.Dimensions)):
		case k > 0 && shape.IsScalar():
			scalar[k] = true
		default:
			return fallback(opWhere, gomlxWhere, backend, node, inputs, inputsOwned)
		}
		if flats[k], err = backend.BufferData(in); err != nil {
			return nil, err
		}
	}
	cond, ok := flats[0].([]bool)
	if !ok || !movable(flats[1]) {
		return fallback(opWhere, gomlxWhere, backend, node, inputs, inputsOwned)
	}
	// The output: a branch handed over with the output's shape (then its own elements are left
	// where they are), else a new buffer. With both handed over, the one the condition picks
	// more often: a KV cache's new row, Where(row = pos, broadcast key, cache), then writes one
	// row instead of copying the cache.
	var out *simplego.Buffer
	var outFlat any
	alias := 0 // the branch that is the output, 0: none
	workers := backendParallelism(backend)
	owned := func(k int) bool { return inputsOwned[k] && !scalar[k] }
	switch {
	case owned(1) && owned(2):
		alias = 2
		if 2*countTrue(cond, workers) > len(cond) {
			alias = 1
		}
	case owned(1):
		alias = 1
	case owned(2):
		alias = 2
	}
	if alias > 0 {
		out, outFlat = inputs[alias], flats[alias]
		inputs[alias] = nil
	} else {
		var err error
		if out, outFlat, err = newOutput(backend, outShape); err != nil {
			return nil, err
		}
	}
	switch t := flats[1].(type) {
	case []float32:
		where(cond, t, flats[2].([]float32), outFlat.([]float32), scalar, alias, workers)
	case []float64:
		where(cond, t, flats[2].([]float64), outFlat.([]float64), scalar, alias, workers)
	case []int32:
		where(cond, t, flats[2].([]int32), outFlat.([]int32), scalar, alias, workers)
	case []int64:
		where(cond, t, flats[2].([]int64), outFlat.([]int64), scalar, alias, workers)
	case []bool:
		where(cond, t, flats[2].([]bool), outFlat.([]bool), scalar, alias, workers)
	}
	count(opWhere)
	return out, nil
}

// where: dst[i] = cond[i] ? onTrue[i] : onFalse[i] (index 0 for a scalar branch). dst is branch
// alias (1: onTrue, 2: onFalse; 0: neither): the elements it would take from itself are skipped.
func where[T any](cond []bool, onTrue, onFalse, dst []T, scalar [3]bool, alias, workers int) {
	parallelFor(len(cond), minParallelWork, workers, func(lo, hi int) {
		switch {
		case alias == 2 && !scalar[1]:
			forEach(cond, lo, hi, true, func(i int) { dst[i] = onTrue[i] })
			return
		case alias == 2: // one value where cond holds (a mask's fill)
			v := onTrue[0]
			forEach(cond, lo, hi, true, func(i int) { dst[i] = v })
			return
		case alias == 1 && !scalar[2]:
			forEach(cond, lo, hi, false, func(i int) { dst[i] = onFalse[i] })
			return
		case alias == 1: // one value where cond fails: Where(mask, scores, −Inf) of attention
			v := onFalse[0]
			forEach(cond, lo, hi, false, func(i int) { dst[i] = v })
			return
		}
		for i := lo; i < hi; i++ {
			j, k := i, i
			if scalar[1] {
				j = 0
			}
			if scalar[2] {
				k = 0
			}
			if cond[i] {
				if alias != 1 {
					dst[i] = onTrue[j]
				}
			} else if alias != 2 {
				dst[i] = onFalse[k]
			}
		}
	})
}

// countTrue counts the true elements of cond (8 at a time: a bool is one byte, 0 or 1).
func countTrue(cond []bool, workers int) int {
	var total atomic.Int64
	parallelFor(len(cond), minParallelWork, workers, func(lo, hi int) {
		b, n := boolBytes(cond[lo:hi]), 0
		i := 0
		for ; i+8 <= len(b); i += 8 {
			n += bits.OnesCount64(le.LittleEndian.Uint64(b[i:]))
		}
		for ; i < len(b); i++ {
			n += int(b[i])
		}
		total.Add(int64(n))
	})
	return int(total.Load())
}

// forEach calls fn(i) for every i in [lo, hi) with cond[i] == want, skipping 8 elements at a
// time where none is wanted (a KV cache's new row among the positions of a chunk).
func forEach(cond []bool, lo, hi int, want bool, fn func(i int)) {
	b := boolBytes(cond[lo:hi])
	var skip uint64 // 8 bytes that hold no wanted element
	if !want {
		skip = 0x0101010101010101
	}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if le.LittleEndian.Uint64(b[i:]) == skip {
			continue
		}
		for j := i; j < i+8; j++ {
			if cond[lo+j] == want {
				fn(lo + j)
			}
		}
	}
	for ; i < len(b); i++ {
		if cond[lo+i] == want {
			fn(lo + i)
		}
	}
}

// boolBytes views c as its bytes (0 or 1 each).
func boolBytes(c []bool) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c))), len(c))
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
