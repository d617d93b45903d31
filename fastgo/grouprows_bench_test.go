package fastgo

import (
	"fmt"
	"testing"
)

// BenchmarkGroupRowsDecode times the scores q·Kᵀ and the weighted sum w·V of a decoding step over one cache chunk
// of the modern suite (32 query heads of 64, chunks of T positions; Hkv key/value heads, G =
// 32/Hkv query rows per key/value head) through groupRows and through what runs without it (gemv,
// or the GEMM where gemv declines), cycling through chunks from memory as a step does
// (decodeChunks). GB/s counts the chunk's bytes; "read" sums the chunk on two workers, in the
// tiles groupScores uses (what reading it costs without the products). In a mode without groupRows' kernels (plain Go) the group path is the other one,
// as in a step.
//
//	GOEXPERIMENT=simd go test ./fastgo -run NONE -bench GroupRowsDecode
//	MHALAB_FASTGO_VEC=avx2,go GOEXPERIMENT=simd go test ./fastgo -run NONE -bench GroupRowsDecode/.*/group  # A/B (vecLoop)
func BenchmarkGroupRowsDecode(b *testing.B) {
	const d = 64
	for _, c := range []struct{ hkv, T int }{{8, 256}, {1, 256}, {1, 4096}} {
		hkv, T := c.hkv, c.T
		G := 32 / hkv
		chunk, size := decodeChunks(hkv, T, d)
		// The two products as DotGenerals [hkv, G, k] · [hkv, n, k]: lhs, its dims, the chunk's
		// contracting axis, out, n and k.
		forms := []struct {
			name     string
			lhs      []float32
			lhsDims  []int
			contract int
			out      []float32
			n, k     int
		}{
			{"scores", make([]float32, hkv*G*d), []int{hkv, G, d}, 2, make([]float32, hkv*G*T), T, d},
			{"weighted", make([]float32, hkv*G*T), []int{hkv, G, T}, 1, make([]float32, hkv*G*d), d, T},
		}
		b.Run(fmt.Sprintf("Hkv=%d/T=%d/read", hkv, T), func(b *testing.B) {
			var sink [64]float32
			vecLoop(b, func(i int) {
				src := chunk(i)
				parallelFor(hkv*T/64, 1, 2, func(lo, hi int) { // tiles of 64 rows, as groupScores'
					s, _ := sumF32Vec(src[lo*64*d : hi*64*d])
					sink[lo%64] += s
				})
			})
			b.ReportMetric(float64(size*4)/1e9/(b.Elapsed().Seconds()/float64(b.N)), "GB/s")
		})
		for _, f := range forms {
			for _, path := range []string{"group", "before"} {
				b.Run(fmt.Sprintf("Hkv=%d/T=%d/%s/%s", hkv, T, f.name, path), func(b *testing.B) {
					vecLoop(b, func(i int) {
						l := newOperand(f.lhs, f.lhsDims, []int{2}, []int{0})
						r := newOperand(chunk(i), []int{hkv, T, d}, []int{f.contract}, []int{0})
						if path == "group" && hasGroupRows() {
							if !groupRows(l, r, f.out, hkv, G, f.n, f.k, 2) {
								b.Fatal("groupRows declined")
							}
						} else if !gemv(l, r, f.out, hkv, G, f.n, f.k, 2) {
							gemm(kernelF32, l, r, f.out, hkv, G, f.n, f.k, 2)
						}
					})
					b.ReportMetric(float64(size*4)/1e9/(b.Elapsed().Seconds()/float64(b.N)), "GB/s")
				})
			}
		}
	}
}

// decodeChunks returns cache chunks [hkv, T, d] (filled with a pattern) that a benchmark cycles
// through as a step does, and the values per chunk: a multiple of 16 chunks (vecLoop's blocks of
// 16 operations then bring each chunk back to a mode as cold as it was) and at least 96 MB in
// all, three times this machine's L3 cache, so that each product reads its chunk from memory
// as a decoding step does (with 16 chunks of 512 KB, 8 MB in all, the products read L3 and
// measured twice the GB/s they reach in BenchmarkKVDecode).
func decodeChunks(hkv, T, d int) (chunk func(i int) []float32, size int) {
	size = hkv * T * d
	chunks := 16 * max(1, ceilDiv(96<<20, 16*size*4))
	cache := make([]float32, chunks*size)
	for i := range cache {
		cache[i] = float32(i%13) * 0.01
	}
	return func(i int) []float32 { return cache[(i%chunks)*size:][:size] }, size
}
