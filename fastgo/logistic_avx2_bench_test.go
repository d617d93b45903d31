//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkLogisticF32AVX2: the AVX2 logistic (SiLU's sigmoid) on one SmolLM2-135M MLP row
// (1536 values, 30 of them per token), ns per value in the ns/op column divided by 1536.
//
//	GOEXPERIMENT=simd go test ./fastgo -run NONE -bench LogisticF32AVX2
func BenchmarkLogisticF32AVX2(b *testing.B) {
	if !vecAVX2 {
		b.Skip("no AVX2+FMA")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	src, dst := make([]float32, 1536), make([]float32, 1536)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * 4)
	}
	b.SetBytes(int64(8 * len(src)))
	for b.Loop() {
		logisticF32AVX2(dst, src)
	}
}

// TestLogisticFusedSameBits: logisticF32AVX2 (the fused, hand-inlined loop) and
// logisticF32AVX2Ref (logistic4AVX2 per half, exp64x4 called) give the same bits on every 4093rd
// float32 bit pattern and on rows of every length up to 40 (the tails).
func TestLogisticFusedSameBits(t *testing.T) {
	needAVX2(t)
	var src []float32
	for b := uint64(0); b < 1<<32; b += 4093 {
		src = append(src, math.Float32frombits(uint32(b)))
	}
	check := func(src []float32) {
		t.Helper()
		got, want := make([]float32, len(src)), make([]float32, len(src))
		logisticF32AVX2(got, src)
		logisticF32AVX2Ref(want, src)
		for i := range src {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("len %d: logistic(%g): fused %g (bits %#x), readable %g (bits %#x)", len(src), src[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
	check(src)
	for n := range 41 {
		check(src[1000 : 1000+n])
	}
}
