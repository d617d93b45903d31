package fastgo

import (
	"math"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
)

// Logistic (SiLU's sigmoid): GoMLX's kernel computes, element by element on one goroutine and
// in float64, 1/(1 + e^−x) for x ≥ 0 and e^x/(1 + e^x) below, with math.Exp. float32 runs here
// the same formula on AVX-512 lanes (logisticF32Vec: equal but for rare double roundings, 1
// ulp), float64 (and float32 without AVX-512) GoMLX's own code cut over several goroutines.

//go:linkname gomlxLogistic github.com/gomlx/gomlx/backends/simplego.execLogistic
func gomlxLogistic(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

func execLogistic(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	if !enabled.Load() {
		return fallback(opLogistic, gomlxLogistic, backend, node, inputs, inputsOwned)
	}
	inFlat, err := backend.BufferData(inputs[0])
	if err != nil {
		return nil, err
	}
	switch inFlat.(type) {
	case []float32, []float64:
	default:
		return fallback(opLogistic, gomlxLogistic, backend, node, inputs, inputsOwned)
	}
	out, outFlat, err := unaryOutput(backend, node, inputs, inputsOwned)
	if err != nil {
		return nil, err
	}
	workers := backendParallelism(backend)
	switch in := inFlat.(type) {
	case []float32:
		dst := outFlat.([]float32)
		parallelFor(len(in), minParallelWork, workers, func(lo, hi int) {
			if !logisticF32Vec(dst[lo:hi], in[lo:hi]) {
				logisticGo(dst[lo:hi], in[lo:hi])
			}
		})
	case []float64:
		dst := outFlat.([]float64)
		parallelFor(len(in), minParallelWork/8, workers, func(lo, hi int) { logisticGo(dst[lo:hi], in[lo:hi]) })
	}
	count(opLogistic)
	return out, nil
}

// logisticGo is GoMLX's formula: dst[i] = logistic(src[i]) computed in float64.
func logisticGo[T Float](dst, src []T) {
	for i, x := range src {
		if x >= 0 {
			dst[i] = T(1 / (1 + math.Exp(-float64(x))))
		} else {
			e := math.Exp(float64(x))
			dst[i] = T(e / (1 + e))
		}
	}
}
