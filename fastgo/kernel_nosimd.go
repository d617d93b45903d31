//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

// Without GOEXPERIMENT=simd (or on another architecture, or a Go other than 1.26) there are no
// archsimd kernels: float32 runs an assembly kernel where one runs (amd64 with AVX-512:
// kernel_avx512.go; with AVX2 and FMA: kernel_avx2.go), float64 and everything else the plain-Go kernel.

func simdKernelF32() (microKernel[float32], bool) {
	if k, ok := asmKernelF32AVX512(); ok {
		return k, true
	}
	return asmKernelF32()
}
func simdKernelF64() (microKernel[float64], bool) { return microKernel[float64]{}, false }
