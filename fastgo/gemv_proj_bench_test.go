package fastgo

import (
	"fmt"
	"testing"
)

// BenchmarkGEMVProj times gemv on a decoding step's projections in the modern suite's shapes:
// x [1, E] · Wᵀ with W [n, E] (PyTorch's [out, in] layout: the dot form), E 2048, n = 2048
// (queries, output) and n = 64·Hkv (keys, values: 512 for 8 key/value heads, 64 for 1), on
// two workers. It cycles through copies of W (≥ 96 MB in all, three times the L3 cache) so
// that each product reads W from memory, as a step does. GB/s counts W's bytes. "read" is the
// reference: the same bytes summed (sumF32Vec, rows split over the workers as gemv splits
// them), what reading W costs without the products.
//
//	GOEXPERIMENT=simd go test ./fastgo -run NONE -bench GEMVProj
func BenchmarkGEMVProj(b *testing.B) {
	const E = 2048
	for _, n := range []int{2048, 512, 64} {
		copies := max(6, (96<<20)/(n*E*4))
		w := make([]float32, copies*n*E)
		for i := range w {
			w[i] = float32(i%13) * 0.01
		}
		x := make([]float32, E)
		for i := range x {
			x[i] = float32(i%7) * 0.1
		}
		out := make([]float32, n)
		wOf := func(i int) []float32 { return w[(i%copies)*n*E:][:n*E] }
		report := func(b *testing.B) {
			b.ReportMetric(float64(n*E*4)/1e9/(b.Elapsed().Seconds()/float64(b.N)), "GB/s")
		}
		b.Run(fmt.Sprintf("n=%d/gemv", n), func(b *testing.B) {
			vecLoop(b, func(i int) {
				l := newOperand(x, []int{1, E}, []int{1}, nil)
				r := newOperand(wOf(i), []int{n, E}, []int{1}, nil)
				if !gemv(l, r, out, 1, 1, n, E, 2) {
					b.Fatal("gemv declined")
				}
			})
			report(b)
		})
		b.Run(fmt.Sprintf("n=%d/read", n), func(b *testing.B) {
			var sink [64]float32
			vecLoop(b, func(i int) {
				src := wOf(i)
				rows := min(64, 4*ceilDiv(n, 8)) // gemv's tiles: at least one per worker
				parallelFor(ceilDiv(n, rows), 1, 2, func(lo, hi int) {
					s, _ := sumF32Vec(src[lo*rows*E : min(hi*rows, n)*E])
					sink[lo%64] += s
				})
			})
			report(b)
		})
	}
}
