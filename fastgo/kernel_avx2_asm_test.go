//go:build amd64

package fastgo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelAsmSameBits checks the assembly kernel (kernel_avx2_amd64.s) against tileFMA, the
// definition in plain Go (math.FMA rounds once, as VFMADD231PS), on the same operands: on A's rows in place (kernelF32x8GroupsAsm, one group),
// on the packed [kc, 4] panel (kernelF32x8Asm), and over several row groups in one call
// (kernelF32x8GroupsAsm, rows in place a stride apart, groups a stride apart, with padding
// between them) must give the same bits (the same FMAs in the same k order); for every kc 0…37
// (the unrolled loop and its tail) and 128, 131, with and without accumulate, NaN and Inf
// included, and no byte of C outside the tiles written. On an AVX-512 CPU too (AVX2 is a subset).
func TestKernelAsmSameBits(t *testing.T) {
	if _, ok := asmKernelF32(); !ok {
		t.Skip("no AVX2+FMA on this CPU")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 2))
	const ldc = 19 // c rows wider than 16 and not a multiple of 8
	kcs := []int{128, 131}
	for kc := range 38 {
		kcs = append(kcs, kc)
	}
	for _, kc := range kcs {
		const groups = 3
		lda, gap := kc+5, 3 // A's rows lda apart, groups 4·lda + gap apart
		gstride := 4*lda + gap
		aRows := make([]float32, groups*gstride)
		for i := range aRows {
			aRows[i] = float32(math.NaN()) // padding: a kernel reading it would put NaN in C
		}
		init := make([]float32, 4*groups*ldc)
		for i := range init {
			init[i] = float32(rng.NormFloat64())
		}
		_, b := randTileOperands(rng, kc) // every group against the same B
		for _, acc := range []bool{false, true} {
			want := append([]float32(nil), init...)
			gotGroups := append([]float32(nil), init...)
			for g := range groups {
				a, _ := randTileOperands(rng, kc)
				for k := range kc {
					for r := range 4 {
						aRows[g*gstride+r*lda+k] = a[4*k+r]
					}
				}
				tileFMA(kc, a, b, want[4*g*ldc:], ldc, acc)
				got := append([]float32(nil), init[4*g*ldc:]...)
				kernelF32x8GroupsAsm(kc, aRows[g*gstride:], lda, 1, gstride, 1, b, got, ldc, acc)
				sameBits(t, "kernelF32x8GroupsAsm, one group", kc, acc, want[4*g*ldc:], got)
				got = append(got[:0], init[4*g*ldc:]...)
				kernelF32x8Asm(kc, a, b, got, ldc, acc)
				sameBits(t, "kernelF32x8Asm", kc, acc, want[4*g*ldc:], got)
			}
			kernelF32x8GroupsAsm(kc, aRows, lda, 1, gstride, groups, b, gotGroups, ldc, acc)
			sameBits(t, "kernelF32x8GroupsAsm", kc, acc, want, gotGroups)
		}
	}
}

// TestKernelAsmBounds checks that the assembly kernel's Go wrappers refuse operands too short
// for what the kernel would read or write (a panic before the kernel runs), not read past them.
func TestKernelAsmBounds(t *testing.T) {
	if _, ok := asmKernelF32(); !ok {
		t.Skip("no AVX2+FMA on this CPU")
	}
	const kc, ldc = 8, 16
	a, b, c := make([]float32, 4*kc), make([]float32, 16*kc), make([]float32, 8*ldc)
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"rows: the last row short", func() { kernelF32x8GroupsAsm(kc, a[:4*kc-1], kc, 1, 4*kc, 1, b, c, ldc, false) }},
		{"packed: B short", func() { kernelF32x8Asm(kc, a, b[:16*kc-1], c, ldc, false) }},
		{"packed: C short", func() { kernelF32x8Asm(kc, a, b, c[:3*ldc+15], ldc, false) }},
		{"groups: A short", func() { kernelF32x8GroupsAsm(kc, a, kc, 1, 4*kc, 2, b, c, ldc, false) }},
		{"groups: C short", func() { kernelF32x8GroupsAsm(kc, a, 1, 4, 0, 3, b, c, ldc, false) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.fn()
		}()
	}
}

// tileFMA is the 4×16 micro-kernel's definition: for a packed A [kc, 4] and B [kc, 16], each
// output is the chain acc = fma(A(r, k), B(k, j), acc) over k in order from zero, then stored in
// c, or added to it (acc + c) with accumulate.
func tileFMA(kc int, a, b, c []float32, ldc int, accumulate bool) {
	tileFMAN(kc, 16, a, b, c, ldc, accumulate)
}

// tileFMAN is tileFMA for a 4×nr tile (B [kc, nr]).
func tileFMAN(kc, nr int, a, b, c []float32, ldc int, accumulate bool) {
	for r := range 4 {
		for j := range nr {
			var acc float32
			for k := range kc {
				acc = float32(math.FMA(float64(a[4*k+r]), float64(b[nr*k+j]), float64(acc)))
			}
			if accumulate {
				acc += c[r*ldc+j]
			}
			c[r*ldc+j] = acc
		}
	}
}

func sameBits(t *testing.T, name string, kc int, acc bool, want, got []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s kc=%d accumulate=%v: c[%d] = %v, want %v (bits %#x, %#x)", name, kc, acc, i, got[i], want[i], math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}

// randTileOperands is a 4×16 micro-kernel's operands for depth kc: A [4, kc] and B [kc, 16] of
// normal values, with (kc > 3) one NaN in A and one +Inf in B.
func randTileOperands(rng *rand.Rand, kc int) (a, b []float32) { return randTileOperandsN(rng, kc, 16) }

// randTileOperandsN is randTileOperands for a 4×nr tile (B [kc, nr]).
func randTileOperandsN(rng *rand.Rand, kc, nr int) (a, b []float32) {
	a, b = make([]float32, 4*kc), make([]float32, nr*kc)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	for i := range b {
		b[i] = float32(rng.NormFloat64())
	}
	if kc > 3 {
		a[rng.IntN(len(a))] = float32(math.NaN())
		b[rng.IntN(len(b))] = float32(math.Inf(1))
	}
	return a, b
}
