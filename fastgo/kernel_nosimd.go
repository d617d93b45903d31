//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

// Without GOEXPERIMENT=simd (or on another architecture, or a Go other than 1.26) there are no
// archsimd kernels: float32 runs the AVX2 assembly kernel where it runs (amd64 with AVX2 and
// FMA: kernel_avx2.go), float64 and everything else the plain-Go kernel.

func simdKernelF32() (microKernel[float32], bool) { return asmKernelF32() }
func simdKernelF64() (microKernel[float64], bool) { return microKernel[float64]{}, false }
