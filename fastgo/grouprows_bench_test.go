package fastgo

import (
	"fmt"
	"testing"
)

// BenchmarkGroupRowsDecode times the scores q·Kᵀ and the weighted sum w·V of a decoding step over one cache chunk
// of the modern suite (32 query heads of 64, chunks of T positions; Hkv key/value heads, G =
// 32/Hkv query rows per key/value head) through groupRows and through what runs without it (gemv,
// or the GEMM where gemv declines), cycling through 16 chunks as a step does. GB/s counts the
// chunk's bytes.
//
//	GOEXPERIMENT=simd go test ./fastgo -run NONE -bench GroupRowsDecode
func BenchmarkGroupRowsDecode(b *testing.B) {
	const d, chunks = 64, 16
	for _, c := range []struct{ hkv, T int }{{8, 256}, {1, 256}, {1, 4096}} {
		hkv, T := c.hkv, c.T
		G := 32 / hkv
		size := hkv * T * d
		cache := make([]float32, chunks*size)
		for i := range cache {
			cache[i] = float32(i%13) * 0.01
		}
		q := make([]float32, hkv*G*d)
		scores := make([]float32, hkv*G*T)
		w := make([]float32, hkv*G*T)
		out := make([]float32, hkv*G*d)
		chunk := func(i int) []float32 { return cache[(i%chunks)*size:][:size] }
		for _, path := range []string{"group", "before"} {
			b.Run(fmt.Sprintf("Hkv=%d/T=%d/scores/%s", hkv, T, path), func(b *testing.B) {
				i := 0
				for b.Loop() {
					l := newOperand(q, []int{hkv, G, d}, []int{2}, []int{0})
					r := newOperand(chunk(i), []int{hkv, T, d}, []int{2}, []int{0})
					if path == "group" && !groupRows(l, r, scores, hkv, G, T, d, 2) {
						b.Fatal("groupRows declined")
					} else if path == "before" && !gemv(l, r, scores, hkv, G, T, d, 2) {
						gemm(kernelF32, l, r, scores, hkv, G, T, d, 2)
					}
					i++
				}
				b.ReportMetric(float64(size*4)/1e9/(b.Elapsed().Seconds()/float64(b.N)), "GB/s")
			})
			b.Run(fmt.Sprintf("Hkv=%d/T=%d/weighted/%s", hkv, T, path), func(b *testing.B) {
				i := 0
				for b.Loop() {
					l := newOperand(w, []int{hkv, G, T}, []int{2}, []int{0})
					r := newOperand(chunk(i), []int{hkv, T, d}, []int{1}, []int{0})
					if path == "group" && !groupRows(l, r, out, hkv, G, d, T, 2) {
						b.Fatal("groupRows declined")
					} else if path == "before" && !gemv(l, r, out, hkv, G, d, T, 2) {
						gemm(kernelF32, l, r, out, hkv, G, d, T, 2)
					}
					i++
				}
				b.ReportMetric(float64(size*4)/1e9/(b.Elapsed().Seconds()/float64(b.N)), "GB/s")
			})
		}
	}
}
