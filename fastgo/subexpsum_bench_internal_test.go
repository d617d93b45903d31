//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSubExpSum times softmax's numerator on rows of 512 scores in L2 (64 Ki values), ns per
// value on one core: exp alone (expF32Vec), the three passes that expRows ran (subtract the row
// maximum, exp, sum) and the one pass that stands for them (subExpSumF32Vec), at the vector level
// in use (MHALAB_FASTGO_VEC=avx2 for the AVX2 loops).
//
//	GOEXPERIMENT=simd go test ./fastgo -run NONE -bench SubExpSum
func BenchmarkSubExpSum(b *testing.B) {
	if !vecAVX512 && !vecAVX2 {
		b.Skip("no AVX-512 or AVX2 with FMA")
	}
	const cols = 512
	rng := rand.New(rand.NewPCG(5, 6))
	src := make([]float32, 64<<10)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * 8)
	}
	dst := make([]float32, len(src))
	perValue := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(src)), "ns/value")
	}
	b.Run("exp", func(b *testing.B) {
		for b.Loop() {
			expF32Vec(dst, src)
		}
		perValue(b)
	})
	b.Run("passes", func(b *testing.B) {
		for b.Loop() {
			for r := 0; r < len(src); r += cols {
				row := dst[r : r+cols]
				binaryF32Vec(opSub, row, src[r:r+cols], src[r:r+1], false, false)
				expF32Vec(row, row)
				sumF32Vec(row)
			}
		}
		perValue(b)
	})
	b.Run("fused", func(b *testing.B) {
		for b.Loop() {
			for r := 0; r < len(src); r += cols {
				subExpSumF32Vec(dst[r:r+cols], src[r:r+cols], src[r], true)
			}
		}
		perValue(b)
	})
}
