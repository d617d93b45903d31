package fastgo

import (
	"math"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
)

// Exp: GoMLX's kernel computes float32(math.Exp(float64(x))) element by element on one
// goroutine. float32 runs here on the AVX-512 or AVX2 loop (expF32Vec, within about 1 ulp of
// GoMLX's correctly rounded results), float64 (and float32 without either) with GoMLX's own
// formula — the same values — cut over several goroutines. The input's buffer is reused when
// simplego hands it over (its last use).

//go:linkname gomlxExp github.com/gomlx/gomlx/backends/simplego.execExp
func gomlxExp(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

func execExp(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	if out, ok, err := takeFusedExp(backend, node, inputs, inputsOwned); err != nil || ok {
		return out, err // fuse.go: the Sub before computed it
	}
	out, err := execUnaryFloat(opExp, gomlxExp, expF32, expF64, minParallelWork, backend, node, inputs, inputsOwned)
	dropFused(out)
	return out, err
}

// expF32 is exp on the AVX-512 or AVX2 loop, else GoMLX's formula.
func expF32(dst, src []float32) {
	if !expF32Vec(dst, src) {
		for i, x := range src {
			dst[i] = float32(math.Exp(float64(x)))
		}
	}
}

// expF64 is GoMLX's formula.
func expF64(dst, src []float64) {
	for i, x := range src {
		dst[i] = math.Exp(x)
	}
}

// execUnaryFloat computes an element-wise unary op o of a float32 or float64 node with f32 or
// f64 (dst[i] = f(src[i]) over a range), cut over several goroutines, into the input's buffer
// when simplego hands it over; other dtypes, and everything while switched off, go to GoMLX's
// executor gomlx.
//
// grain is the fewest float32 elements of a range: minParallelWork for a cheap op, fewer for one
// dearer per element (logistic.go).
func execUnaryFloat(o op, gomlx nodeExecutor, f32 func(dst, src []float32), f64 func(dst, src []float64), grain int,
	backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	if !enabled.Load() {
		return fallback(o, gomlx, backend, node, inputs, inputsOwned)
	}
	inFlat, err := backend.BufferData(inputs[0])
	if err != nil {
		return nil, err
	}
	switch inFlat.(type) {
	case []float32, []float64:
	default:
		return fallback(o, gomlx, backend, node, inputs, inputsOwned)
	}
	out, outFlat, err := unaryOutput(backend, node, inputs, inputsOwned)
	if err != nil {
		return nil, err
	}
	workers := backendParallelism(backend)
	switch in := inFlat.(type) {
	case []float32:
		dst := outFlat.([]float32)
		parallelFor(len(in), grain, workers, func(lo, hi int) { f32(dst[lo:hi], in[lo:hi]) })
	case []float64:
		dst := outFlat.([]float64)
		parallelFor(len(in), minParallelWork/8, workers, func(lo, hi int) { f64(dst[lo:hi], in[lo:hi]) })
	}
	count(o)
	return out, nil
}

// unaryOutput is the output buffer of an element-wise unary op: the input's own buffer when
// simplego hands it over (inputsOwned[0]: this is its last use; inputs[0] is then set to nil,
// simplego's sign that the executor took it), a new one of the node's shape otherwise.
func unaryOutput(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, any, error) {
	if inputsOwned[0] {
		out := inputs[0]
		flat, err := backend.BufferData(out)
		if err != nil {
			return nil, nil, err
		}
		inputs[0] = nil
		return out, flat, nil
	}
	return newOutput(backend, nodeShape(node))
}
