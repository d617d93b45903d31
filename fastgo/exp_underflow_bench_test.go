//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"testing"
)

// BenchmarkExpUnderflow times expF32Vec (abTime: interleaved rounds, G elements per CPU-second)
// on rows of 4096 equal values: ordinary logits (−3); −Inf, the masked logits of causal
// attention, and −120, whose exp is +0; −95, whose exp is subnormal. With Go's MXCSR (no flush
// to zero) an Intel core takes a microcode assist on every instruction whose result underflows:
// expF32Vec computes the first two kinds of vector without one (vec_simd.go), only the third
// pays it.
func BenchmarkExpUnderflow(b *testing.B) {
	dst := make([]float32, 4096)
	row := func(v float32) []float32 {
		s := make([]float32, len(dst))
		for i := range s {
			s[i] = v
		}
		return s
	}
	normal, masked, zero, subnormal := row(-3), row(float32(math.Inf(-1))), row(-120), row(-95)
	abTime(b, 7, 2e6,
		abVariant{"logits", float64(len(dst)), func() { expF32Vec(dst, normal) }},
		abVariant{"-inf", float64(len(dst)), func() { expF32Vec(dst, masked) }},
		abVariant{"-120", float64(len(dst)), func() { expF32Vec(dst, zero) }},
		abVariant{"-95", float64(len(dst)), func() { expF32Vec(dst, subnormal) }},
	)
}
