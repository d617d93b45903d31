package fastgo

import (
	"fmt"
	"testing"
)

// BenchmarkGroupRowsDecode times the scores q·Kᵀ and the weighted sum w·V of a decoding step over one cache chunk
// of the modern suite (32 query heads of 64, chunks of T positions; Hkv key/value heads, G =
// 32/Hkv query rows per key/value head) through groupRows and through what runs without it (gemv,
// or the GEMM where gemv declines), cycling through 16 chunks as a step does. GB/s counts the
// chunk's bytes. In a mode without groupRows' kernels (plain Go) the group path is the other one,
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

// decodeChunks returns 16 cache chunks [hkv, T, d] (filled with a pattern; a benchmark cycles
// through them as a step does, so that a chunk is not in the cache) and the values per chunk.
func decodeChunks(hkv, T, d int) (chunk func(i int) []float32, size int) {
	const chunks = 16
	size = hkv * T * d
	cache := make([]float32, chunks*size)
	for i := range cache {
		cache[i] = float32(i%13) * 0.01
	}
	return func(i int) []float32 { return cache[(i%chunks)*size:][:size] }, size
}
