//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSubExpSumF32: subExpSumF32Vec's one pass gives the bits of the three passes it stands for
// (the subtraction, exp and row sum of the vector loops in use), and so does its AVX2 twin with
// the AVX2 loops, on rows of every length up to 200 (all the tails) and a few long ones, with
// exp's special inputs (NaN, ±Inf, ±0, the overflow and underflow edges: expInput) and maxima m
// that are 0, random, a row's own maximum and the special values; nothing written past the row.
func TestSubExpSumF32(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(vecSeed(t), 41))
	type level struct {
		name string
		fuse func(dst, src []float32, m float32, sum bool) float32
		sub  func(dst, src []float32, m float32)
		exp  func(dst, src []float32)
		sum  func(row []float32) float32
	}
	levels := []level{{
		name: "avx2",
		fuse: subExpSumF32AVX2,
		sub:  func(dst, src []float32, m float32) { binaryF32AVX2(opSub, dst, src, []float32{m}, false, false) },
		exp:  expF32AVX2,
		sum:  sumF32AVX2,
	}}
	if vecAVX512 {
		levels = append(levels, level{
			name: "avx512",
			fuse: func(dst, src []float32, m float32, sum bool) float32 {
				s, ok := subExpSumF32Vec(dst, src, m, sum)
				if !ok {
					t.Fatal("subExpSumF32Vec reports false on an AVX-512 CPU")
				}
				return s
			},
			sub: func(dst, src []float32, m float32) { binaryF32Vec(opSub, dst, src, []float32{m}, false, false) },
			exp: func(dst, src []float32) { expF32Vec(dst, src) },
			sum: func(row []float32) float32 { s, _ := sumF32Vec(row); return s },
		})
	}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	cases := 0
	for _, n := range lengths() {
		src := make([]float32, n)
		for round := range 4 {
			expInput(rng, src)
			if round == 3 { // scores of a plausible size, no specials: sums of many normal values
				for i := range src {
					src[i] = float32(rng.NormFloat64() * 8)
				}
			}
			ms := []float32{0, float32(rng.NormFloat64() * 30), expSpecials[rng.IntN(len(expSpecials))]}
			if n > 0 {
				mx := src[0]
				for _, v := range src {
					mx = max(mx, v)
				}
				ms = append(ms, mx)
			}
			for _, m := range ms {
				for _, lv := range levels {
					want := make([]float32, n)
					lv.sub(want, src, m)
					lv.exp(want, want)
					wantSum := lv.sum(want)
					for _, withSum := range []bool{true, false} {
						got, tail := guarded(t, n)
						s := lv.fuse(got, src, m, withSum)
						tail()
						for i := range want {
							if !same(got[i], want[i]) {
								t.Fatalf("%s n %d m %g: element %d: exp(%g − m) = %g (bits %#x), the passes give %g (bits %#x)",
									lv.name, n, m, i, src[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
							}
						}
						if withSum && !same(s, wantSum) {
							t.Fatalf("%s n %d m %g: sum %v (bits %#x), the passes give %v (bits %#x)",
								lv.name, n, m, s, math.Float32bits(s), wantSum, math.Float32bits(wantSum))
						}
						if !withSum && s != 0 {
							t.Fatalf("%s n %d: without sum it returned %v, want 0", lv.name, n, s)
						}
						cases++
					}
				}
			}
		}
	}
	t.Logf("%d rows, %d levels", cases/2/len(levels), len(levels))
}
