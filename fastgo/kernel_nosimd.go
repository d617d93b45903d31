//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

// Without GOEXPERIMENT=simd (or on another architecture, or a Go other than 1.26) there are no
// archsimd kernels: float64 runs the plain-Go kernel (float32 runs an assembly kernel where one
// runs: kernel_f32.go).

func simdKernelF64() (microKernel[float64], bool) { return microKernel[float64]{}, false }
