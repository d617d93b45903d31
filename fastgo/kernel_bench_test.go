package fastgo

import "testing"

// BenchmarkMicroKernel times each micro-kernel alone on packed panels that stay in L1 (kc=256),
// in GFLOP/s of one goroutine: the ceiling of the GEMM built on it.
func BenchmarkMicroKernel(b *testing.B) {
	kernels := []microKernel[float32]{goKernel[float32]()}
	if k, ok := simdKernelF32(); ok {
		kernels = append(kernels, k)
	}
	const kc = 256
	for _, kern := range kernels {
		b.Run(kern.name, func(b *testing.B) {
			a, bb := make([]float32, kc*kern.mr), make([]float32, kc*kern.nr)
			for i := range a {
				a[i] = float32(i%7) * 0.25
			}
			for i := range bb {
				bb[i] = float32(i%5) * 0.5
			}
			c := make([]float32, kern.mr*kern.nr)
			for b.Loop() {
				kern.fn(kc, a, bb, c, kern.nr, true)
			}
			b.ReportMetric(2*float64(kc*kern.mr*kern.nr)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
