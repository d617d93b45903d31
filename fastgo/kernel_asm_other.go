//go:build !amd64

package fastgo

// asmKernelF32: the assembly kernel is amd64's only (kernel_avx2.go).
func asmKernelF32() (microKernel[float32], bool) { return microKernel[float32]{}, false }

// asmKernelF32AVX512: the assembly kernel is amd64's only (kernel_avx512.go).
func asmKernelF32AVX512() (microKernel[float32], bool) { return microKernel[float32]{}, false }
