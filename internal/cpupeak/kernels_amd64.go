package cpupeak

import "golang.org/x/sys/cpu"

// fmaAVX512 runs n iterations of 12 VFMADD231PS on ZMM registers (kernels_amd64.s).
//
//go:noescape
func fmaAVX512(n int64) float32

// fmaAVX2 runs n iterations of 12 VFMADD231PS on YMM registers (kernels_amd64.s).
//
//go:noescape
func fmaAVX2(n int64) float32

var (
	kernelAVX512 = kernel{name: "AVX-512 FMA, 16 float32 lanes", lanes: 16, run: fmaAVX512}
	kernelAVX2   = kernel{name: "AVX2 FMA, 8 float32 lanes", lanes: 8, run: fmaAVX2}
)

// kernels returns the kernels this CPU runs, widest first.
func kernels() []kernel {
	var ks []kernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, kernelAVX512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, kernelAVX2)
	}
	return ks
}

// bestKernel returns the widest kernel this CPU runs.
func bestKernel() (kernel, bool) {
	ks := kernels()
	if len(ks) == 0 {
		return kernel{}, false
	}
	return ks[0], true
}
