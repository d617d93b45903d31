//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

// Without GOEXPERIMENT=simd (or on another architecture, or a Go other than 1.26) there is no
// SIMD kernel: the plain-Go kernel runs.

func simdKernelF32() (microKernel[float32], bool) { return microKernel[float32]{}, false }
func simdKernelF64() (microKernel[float64], bool) { return microKernel[float64]{}, false }
