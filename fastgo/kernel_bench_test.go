package fastgo

import (
	"runtime"
	"testing"
)

// BenchmarkMicroKernel times each micro-kernel alone on panels that stay in L1 (kc = 256, or the
// kernel's own kc), in
// GFLOP/s of one goroutine (elapsed) and, on Linux, GFLOP per CPU-second of its thread — which
// other load on a shared machine moves much less: the ceiling of the GEMM built on it.
func BenchmarkMicroKernel(b *testing.B) {
	kernels := []microKernel[float32]{goKernel[float32]()}
	if k, ok := simdKernelF32(); ok {
		kernels = append(kernels, k)
	}
	for _, kern := range kernels {
		kc := 256
		if kern.kc > 0 {
			kc = kern.kc
		}
		a, bb := make([]float32, kc*kern.mr), make([]float32, kc*kern.nr)
		for i := range a {
			a[i] = float32(i%7) * 0.25
		}
		for i := range bb {
			bb[i] = float32(i%5) * 0.5
		}
		c := make([]float32, kern.mr*kern.nr)
		flops := 2 * float64(kc*kern.mr*kern.nr)
		b.Run(kern.name, func(b *testing.B) {
			timeKernel(b, flops, func() { kern.fn(kc, a, bb, c, kern.nr, true) })
		})
	}
}

// timeKernel runs fn in b's loop on one locked OS thread and reports GFLOP/s (elapsed) and
// GFLOP/cpu-s (the thread's CPU time, where it can be read).
func timeKernel(b *testing.B, flops float64, fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPUNS()
	for b.Loop() {
		fn()
	}
	cpu1 := threadCPUNS()
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu0 >= 0 && cpu1 > cpu0 {
		b.ReportMetric(flops*float64(b.N)/float64(cpu1-cpu0), "GFLOP/cpu-s")
	}
}
