package fastgo

import (
	"fmt"
	"math"
	"testing"
)

// TestGEMVPairsSameBits checks that gemv gives the same bits with two examples per task
// (gemvpair.go) as with one: a decoding step's q·Kᵀ (B [heads, keys, 64], rows 64 or a
// stride apart) and weights·V (B [heads, keys, 64]) and products the pair kernels decline,
// every example count from 1 to 9 (odd ones end with a single example), in every vector mode
// of the CPU, with 1 and 3 workers; and that with AVX-512 the pair kernels did run.
func TestGEMVPairsSameBits(t *testing.T) {
	defer func(prev bool) { pairExamples = prev }(pairExamples)
	for _, mode := range vecModes() {
		t.Run(mode.name, func(t *testing.T) {
			withVecMode(t, mode)
			cases := []gemmCase{{0, 1, 256, 64}, {0, 1, 64, 256}, {0, 1, 3, 64}, {0, 1, 64, 7}, {0, 1, 33, 64}, {0, 1, 100, 100}}
			for _, c := range cases {
				for batch := 1; batch <= 9; batch++ {
					c.batch = batch
					for li, ll := range layouts {
						for ri, rl := range layouts {
							for _, workers := range []int{1, 3} {
								name := fmt.Sprintf("b%d_n%d_k%d/lhs%s_rhs%s/w%d", c.batch, c.n, c.k, ll.name, rl.name, workers)
								l, r, out := randProduct[float32](c, ll, rl, uint64(1000*batch+10*li+ri), 19)
								pairExamples = false
								did := gemv(l, r, out, c.batch, 1, c.n, c.k, workers)
								want := append([]float32(nil), out...)
								for i := range out {
									out[i] = float32(math.NaN())
								}
								pairExamples = true
								if did2 := gemv(l, r, out, c.batch, 1, c.n, c.k, workers); did2 != did {
									t.Fatalf("%s: took the product %v with pairs, %v without", name, did2, did)
								}
								if !did {
									continue
								}
								for i := range out {
									if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
										t.Fatalf("%s: out[%d] = %g with pairs, %g without", name, i, out[i], want[i])
									}
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestGEMVPairKernelsRun checks that with AVX-512 the pair kernels take a decoding step's
// products (so that TestGEMVPairsSameBits compares them, not the fallback twice).
func TestGEMVPairKernelsRun(t *testing.T) {
	if !hasPairKernels() {
		t.Skip("no pair kernels: this CPU (or build) has no AVX-512")
	}
	a0, a1 := make([]float32, 64), make([]float32, 64)
	b := make([]float32, 2*256*64)
	for i := range b {
		b[i] = float32(i%13) - 6
	}
	for i := range a0 {
		a0[i], a1[i] = float32(i%5), float32(i%7)
	}
	off := make([]int, 256)
	for i := range off {
		off[i] = 64 * i
	}
	c0, c1 := make([]float32, 256), make([]float32, 256)
	if !gemvDotPair(a0, a1, b, 0, 256*64, off, c0, c1, 64, 0, 256) {
		t.Fatal("gemvDotPair declined q·Kᵀ over [2, 256, 64]")
	}
	d0, d1 := make([]float32, 64), make([]float32, 64)
	w0, w1 := make([]float32, 256), make([]float32, 256)
	if !gemvAxpyPair(w0, w1, b, 0, 256*64, off, d0, d1, 256, 0, 64) {
		t.Fatal("gemvAxpyPair declined weights·V over [2, 256, 64]")
	}
}
