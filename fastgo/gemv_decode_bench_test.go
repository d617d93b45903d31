package fastgo

import (
	"fmt"
	"testing"
)

// BenchmarkGEMVDecode times gemv on the attention products of a decoding step over one cache
// chunk of the modern suite (32 query heads of 64, a chunk of 256 positions; Hkv key/value
// heads, G = 32/Hkv query rows per key head): scores q·Kᵀ (dot form) with and without the
// streamed rows (streamRows), and the weighted sum w·V (axpy form), also through the GEMM. It cycles through chunks
// (as a step does: decodeChunks), so the chunk is not in the cache. GB/s counts the chunk's bytes. Where gemv
// declines (32 rows without a 4×4 vector kernel: plain Go), the GEMM computes the scores, as it
// would in a step.
//
//	GOEXPERIMENT=simd go test ./fastgo -run NONE -bench GEMVDecode
//	MHALAB_FASTGO_VEC=avx2,go GOEXPERIMENT=simd go test ./fastgo -run NONE -bench GEMVDecode  # A/B (vecLoop)
func BenchmarkGEMVDecode(b *testing.B) {
	const T, d = 256, 64
	for _, hkv := range []int{32, 8, 1} {
		G := 32 / hkv
		chunk, size := decodeChunks(hkv, T, d)
		q := make([]float32, hkv*G*d)
		w := make([]float32, hkv*G*T)
		scores := make([]float32, hkv*G*T)
		out := make([]float32, hkv*G*d)
		report := func(b *testing.B) {
			b.ReportMetric(float64(size*4)/1e9/(b.Elapsed().Seconds()/float64(b.N)), "GB/s")
		}
		for _, stream := range []bool{true, false} {
			b.Run(fmt.Sprintf("Hkv=%d/scores/stream=%v", hkv, stream), func(b *testing.B) {
				defer func(old bool) { streamRows = old }(streamRows)
				streamRows = stream
				vecLoop(b, func(i int) {
					l := newOperand(q, []int{hkv, G, d}, []int{2}, []int{0})
					r := newOperand(chunk(i), []int{hkv, T, d}, []int{2}, []int{0})
					if !gemv(l, r, scores, hkv, G, T, d, 2) {
						gemm(kernelF32, l, r, scores, hkv, G, T, d, 2) // plain Go: gemv declines 32 rows
					}
				})
				report(b)
			})
		}
		for _, viaGEMM := range []bool{true, false} {
			if !viaGEMM && G > gemvMaxRows {
				continue // gemv declines: the GEMM is what runs
			}
			name := fmt.Sprintf("Hkv=%d/weighted", hkv)
			if viaGEMM {
				name += "/gemm"
			}
			b.Run(name, func(b *testing.B) {
				vecLoop(b, func(i int) {
					l := newOperand(w, []int{hkv, G, T}, []int{2}, []int{0})
					r := newOperand(chunk(i), []int{hkv, T, d}, []int{1}, []int{0})
					if viaGEMM {
						gemm(kernelF32, l, r, out, hkv, G, d, T, 2)
					} else if !gemv(l, r, out, hkv, G, d, T, 2) {
						b.Fatal("gemv declined")
					}
				})
				report(b)
			})
		}
	}
}
