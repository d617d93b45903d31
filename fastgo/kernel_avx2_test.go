//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelF32x8BcastSameBits checks the bcast path's kernels against kernelF32x8 on the same
// packed panel: kernelF32x8Bcast on bcastF32Rows' pre-broadcast panel (from the packed [kc, 4]
// panel, stride 4, and from the four rows, stride 1) and kernelF32x8RowsFill on the rows must
// give the same bits (the same FMAs in the same k order), and RowsFill must leave the same panel
// as bcastF32Rows; for every kc 0…37 (the unrolled loop and its tail) and 128, 131, with and
// without accumulate, NaN and Inf included. On an AVX-512 CPU too (AVX2 is a subset).
func TestKernelF32x8BcastSameBits(t *testing.T) {
	if _, ok := avx2KernelF32(); !ok {
		t.Skip("no AVX2+FMA on this CPU")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 2))
	const ldc = 19 // c rows wider than 16 and not a multiple of 8
	kcs := []int{128, 131}
	for kc := range 38 {
		kcs = append(kcs, kc)
	}
	for _, kc := range kcs {
		a, b := randTileOperands(rng, kc)
		if kc > 3 {
			a[rng.IntN(len(a))] = float32(math.Inf(-1))
		}
		rows := [4][]float32{make([]float32, kc), make([]float32, kc), make([]float32, kc), make([]float32, kc)}
		for k := range kc {
			for r := range 4 {
				rows[r][k] = a[4*k+r]
			}
		}
		packed := make([]float32, 32*kc)
		if kc > 0 {
			bcastF32Rows(packed, a, a[1:], a[2:], a[3:], 4, kc)
		}
		fromRows := make([]float32, 32*kc)
		bcastF32Rows(fromRows, rows[0], rows[1], rows[2], rows[3], 1, kc)
		for i := range packed {
			if want := a[4*(i/32)+(i/8)%4]; math.Float32bits(packed[i]) != math.Float32bits(want) || math.Float32bits(fromRows[i]) != math.Float32bits(want) {
				t.Fatalf("kc=%d: bcastF32Rows [%d] = %v (stride 4), %v (stride 1), want %v", kc, i, packed[i], fromRows[i], want)
			}
		}
		for _, acc := range []bool{false, true} {
			init := make([]float32, 4*ldc)
			for i := range init {
				init[i] = float32(rng.NormFloat64())
			}
			want := append([]float32(nil), init...)
			kernelF32x8(kc, a, b, want, ldc, acc)
			got := append([]float32(nil), init...)
			kernelF32x8Bcast(kc, packed, b, got, ldc, acc)
			sameBits(t, "kernelF32x8Bcast", kc, acc, want, got)
			got = append(got[:0], init...)
			filled := make([]float32, 32*kc)
			kernelF32x8RowsFill(kc, rows[0], rows[1], rows[2], rows[3], filled, b, got, ldc, acc)
			sameBits(t, "kernelF32x8RowsFill", kc, acc, want, got)
			sameBits(t, "kernelF32x8RowsFill's panel", kc, acc, packed, filled)
		}
	}
}

// TestGEMMAVX2AgainstGo runs the GEMM with the AVX2 kernel (its bcast path, the direct rows and
// the packed paths) and with the plain-Go kernel on random shapes — edge row groups and column
// tiles, k across several k-blocks, every operand layout, 1 and 3 workers — and checks both
// against the float64 product within the error bound of checkProduct, and each other within
// twice that (they round differently: FMA, k-block depth). A NaN and an infinity in the operands
// must come out where the float64 product has them. Replay with MHALAB_FASTGO_SEED.
func TestGEMMAVX2AgainstGo(t *testing.T) {
	avx2, ok := avx2KernelF32()
	if !ok {
		t.Skip("no AVX2+FMA on this CPU")
	}
	noBcast := avx2
	noBcast.name, noBcast.bcast = avx2.name+"-nobcast", nil
	noFill := avx2
	noFill.name, noFill.bcastRows = avx2.name+"-nofill", nil
	goK := goKernel[float32]()
	seed := vecSeed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	for i := range 40 {
		c := gemmCase{batch: 1 + rng.IntN(3), m: 1 + rng.IntN(70), n: 1 + rng.IntN(150), k: 1 + rng.IntN(300)}
		if i%5 == 0 {
			c.n = 48 + rng.IntN(4)*16 // whole column tiles, the bcast path
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
			for _, kern := range []microKernel[float32]{avx2, noBcast, noFill} {
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
