package fastgo

import (
	"math"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends/simplego"
)

// Logistic (SiLU's sigmoid): GoMLX's kernel computes, element by element on one goroutine and
// in float64, 1/(1 + e^−x) for x ≥ 0 and e^x/(1 + e^x) below, with math.Exp. float32 runs here
// the same formula on AVX-512 or AVX2 lanes (logisticF32Vec: equal but for rare double
// roundings, 1 ulp), float64 (and float32 without either) GoMLX's own code cut over several
// goroutines.

//go:linkname gomlxLogistic github.com/gomlx/gomlx/backends/simplego.execLogistic
func gomlxLogistic(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error)

func execLogistic(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, error) {
	return execUnaryFloat(opLogistic, gomlxLogistic, logisticF32, logisticGo[float64], logisticGrain, backend, node, inputs, inputsOwned)
}

// logisticGrain is the fewest float32 elements of a range of Logistic: ~2.7 ns an element on the
// AVX2 loop (BenchmarkLogisticF32AVX2), so SmolLM2's SiLU over 1536 values (~5 µs, once a layer
// on one core) is cut in two for the team's helper.
const logisticGrain = 768

// logisticF32 is Logistic on the AVX-512 or AVX2 loop, else GoMLX's formula.
func logisticF32(dst, src []float32) {
	if !logisticF32Vec(dst, src) {
		logisticGo(dst, src)
	}
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
