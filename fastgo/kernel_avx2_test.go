//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelArchsimdSameBits checks that the readable archsimd kernels give the assembly
// kernel's bits (kernel_avx2.go says they are its twins): kernelF32x8 against kernelF32x8Asm on
// a packed panel and kernelF32x8Rows against kernelF32x8GroupsAsm on the same values as rows, for
// every kc 0…37 and 128, 131, with and without accumulate, NaN and Inf included.
func TestKernelArchsimdSameBits(t *testing.T) {
	if _, ok := asmKernelF32(); !ok {
		t.Skip("no AVX2+FMA on this CPU")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 4))
	const ldc = 19
	kcs := []int{128, 131}
	for kc := range 38 {
		kcs = append(kcs, kc)
	}
	for _, kc := range kcs {
		a, b := randTileOperands(rng, kc)
		flat := make([]float32, 4*kc) // A's 4 rows, one after another
		for k := range kc {
			for r := range 4 {
				flat[r*kc+k] = a[4*k+r]
			}
		}
		rows := [4][]float32{flat[:kc], flat[kc : 2*kc], flat[2*kc : 3*kc], flat[3*kc:]}
		for _, acc := range []bool{false, true} {
			init := make([]float32, 4*ldc)
			for i := range init {
				init[i] = float32(rng.NormFloat64())
			}
			want := append([]float32(nil), init...)
			kernelF32x8Asm(kc, a, b, want, ldc, acc)
			got := append([]float32(nil), init...)
			kernelF32x8(kc, a, b, got, ldc, acc)
			sameBits(t, "kernelF32x8", kc, acc, want, got)
			got = append(got[:0], init...)
			kernelF32x8Rows(kc, rows[0], rows[1], rows[2], rows[3], b, got, ldc, acc)
			sameBits(t, "kernelF32x8Rows", kc, acc, want, got)
			if kc > 0 {
				got = append(got[:0], init...)
				kernelF32x8GroupsAsm(kc, flat, kc, 1, 4*kc, 1, b, got, ldc, acc)
				sameBits(t, "kernelF32x8GroupsAsm", kc, acc, want, got)
			}
		}
	}
}

// TestGEMMAVX2AgainstGo runs the GEMM with the AVX2 kernel (row groups in one call, one tile a
// call, the direct rows and the packed paths; and the archsimd kernels) and with the plain-Go kernel on random shapes — edge row groups and column
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
	archsimdK := microKernel[float32]{name: "avx2-archsimd", mr: 4, nr: 16, fn: kernelF32x8, rows: kernelF32x8Rows}
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
			for _, kern := range []microKernel[float32]{avx2, tiles, archsimdK} {
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
