package fastgo

// simdKernelF32 returns the best float32 GEMM kernel this CPU runs, and false if none: the
// AVX-512 assembly kernel (kernel_avx512.go), else the AVX2 one (kernel_avx2.go). Both are
// assembly, so any amd64 build has them, GOEXPERIMENT=simd or not; elsewhere there is none
// (kernel_asm_other.go) and the GEMM runs the plain-Go kernel.
func simdKernelF32() (microKernel[float32], bool) {
	if k, ok := asmKernelF32AVX512(); ok {
		return k, true
	}
	return asmKernelF32() // tests call it directly to run it on AVX-512 machines too
}
