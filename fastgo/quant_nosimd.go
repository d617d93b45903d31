//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

// Without GOEXPERIMENT=simd the packed-row kernels are the plain-Go ones (quant_go.go).

func simdQuantKernels() (quantKernels, bool) { return quantKernels{}, false }

func avx2QuantKernels() (quantKernels, bool) { return quantKernels{}, false }

func halves16Into([]byte, []float32) bool { return false }

func halves8Into([]byte, []float32) bool { return false }

func avx2Lanes8Kernels() (quantKernels, bool) { return quantKernels{}, false }
