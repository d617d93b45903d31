//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGEMMAVX2AgainstGo runs the GEMM with the AVX2 kernel (row groups in one call reading A in
// place, and one packed tile a call) and with the plain-Go kernel on random shapes — edge row groups and column
// tiles, k across several k-blocks, every operand layout, 1 and 3 workers — and checks both
// against the float64 product within the error bound of checkProduct, and each other within
// twice that (they round differently: FMA, k-block depth). A NaN and an infinity in the operands
// must come out where the float64 product has them. Replay with MHALAB_FASTGO_SEED.
func TestGEMMAVX2AgainstGo(t *testing.T) {
	avx2, ok := asmKernelF32()
	if !ok {
		t.Skip("no AVX2+FMA on this CPU")
	}
	tiles := avx2
	tiles.name, tiles.groups = avx2.name+"-tiles", nil
	goK := goKernel[float32]()
	seed := vecSeed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	for i := range 40 {
		c := gemmCase{batch: 1 + rng.IntN(3), m: 1 + rng.IntN(70), n: 1 + rng.IntN(150), k: 1 + rng.IntN(300)}
		if i%5 == 0 {
			c.n = 48 + rng.IntN(4)*16 // whole column tiles only
		}
		ll, rl := layouts[rng.IntN(len(layouts))], layouts[rng.IntN(len(layouts))]
		workers := 1 + 2*rng.IntN(2)
		salt := rng.Uint64()
		name := fmt.Sprintf("b%d_m%d_n%d_k%d/lhs%s_rhs%s/w%d", c.batch, c.m, c.n, c.k, ll.name, rl.name, workers)
		t.Run(name, func(t *testing.T) {
			l, r, ref := randProduct[float32](c, ll, rl, seed, salt)
			if i%7 == 3 { // a NaN in lhs, an infinity in rhs
				l.flat[rng.IntN(len(l.flat))] = float32(math.NaN())
				r.flat[rng.IntN(len(r.flat))] = float32(math.Inf(1))
			}
			gemm(goK, l, r, ref, c.batch, c.m, c.n, c.k, workers)
			checkProduct(t, c, l, r, ref, 0x1p-24, goK.name)
			// |got − ref| ≤ |got − exact| + |ref − exact| ≤ 2 · 2(k+1)·u·Σ|lhs·rhs|
			mag := make([]float64, len(ref))
			for b := range c.batch {
				for i := range c.m {
					for j := range c.n {
						for k := range c.k {
							x := float64(l.flat[l.batchOff[b]+l.crossOff[i]+l.contractOff[k]])
							y := float64(r.flat[r.batchOff[b]+r.crossOff[j]+r.contractOff[k]])
							mag[(b*c.m+i)*c.n+j] += math.Abs(x * y)
						}
					}
				}
			}
			bound := 4 * float64(c.k+1) * 0x1p-24
			for _, kern := range []microKernel[float32]{avx2, tiles} {
				out := make([]float32, len(ref))
				for j := range out {
					out[j] = float32(math.NaN())
				}
				gemm(kern, l, r, out, c.batch, c.m, c.n, c.k, workers)
				checkProduct(t, c, l, r, out, 0x1p-24, kern.name)
				for j := range out {
					x, y := float64(out[j]), float64(ref[j])
					if x == y || math.IsNaN(x) && math.IsNaN(y) {
						continue
					}
					if !(math.Abs(x-y) <= bound*mag[j]) {
						t.Fatalf("%s: out[%d] = %v, plain Go %v (bound %.3g)", kern.name, j, x, y, bound*mag[j])
					}
				}
			}
		})
	}
}
