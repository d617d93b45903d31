//go:build amd64

package fastgo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelAsmSameBits checks the AVX2 assembly kernel (kernel_avx2_amd64.s) against tileFMA,
// the definition in plain Go (math.FMA rounds once, as VFMADD231PS), as checkAsmKernelBits
// does. On an AVX-512 CPU too (AVX2 is a subset).
func TestKernelAsmSameBits(t *testing.T) {
	if _, ok := asmKernelF32(); !ok {
		t.Skip("no AVX2+FMA on this CPU")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 2))
	checkAsmKernelBits(t, rng, 19, asmKernelCase{"kernelF32x8", 16, kernelF32x8Asm, kernelF32x8GroupsAsm, nil}) // c rows wider than 16, not a multiple of 8
}

// asmKernelCase is an assembly kernel of 4×nr tiles for checkAsmKernelBits: on a packed A
// [kc, 4], over row groups, and (when not nil) its half, 4×32 from a 64-wide B panel.
type asmKernelCase struct {
	name   string
	nr     int
	packed func(kc int, a, b, c []float32, ldc int, accumulate bool)
	groups func(kc int, a []float32, lda, astride, gstride, groups int, b, c []float32, ldc int, accumulate bool)
	half   func(kc int, a []float32, lda, astride, gstride, groups int, b, c []float32, ldc int, accumulate bool)
}

// checkAsmKernelBits checks each kernel against tileFMAN on the same operands, C rows ldc
// apart: on A's rows in place (one group), on the packed [kc, 4] panel, over several row groups
// in one call (rows in place a stride apart, groups a stride apart, NaN padding between them),
// and half where the case has one — the same bits (the same FMAs in the same k order); for
// every kc 0…37 (the unrolled loops and their tails) and 128, 131, with and without
// accumulate, NaN and Inf included, and no byte of C outside the tiles written.
func checkAsmKernelBits(t *testing.T, rng *rand.Rand, ldc int, kernels ...asmKernelCase) {
	t.Helper()
	kcs := []int{128, 131}
	for kc := range 38 {
		kcs = append(kcs, kc)
	}
	for _, k := range kernels {
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
			_, b := randTileOperandsN(rng, kc, k.nr) // every group against the same B
			for _, acc := range []bool{false, true} {
				want := append([]float32(nil), init...)
				gotGroups := append([]float32(nil), init...)
				for g := range groups {
					a, _ := randTileOperandsN(rng, kc, k.nr)
					for kk := range kc {
						for r := range 4 {
							aRows[g*gstride+r*lda+kk] = a[4*kk+r]
						}
					}
					tileFMAN(kc, k.nr, a, b, want[4*g*ldc:], ldc, acc)
					got := append([]float32(nil), init[4*g*ldc:]...)
					k.groups(kc, aRows[g*gstride:], lda, 1, gstride, 1, b, got, ldc, acc)
					sameBits(t, k.name+" groups, one group", kc, acc, want[4*g*ldc:], got)
					got = append(got[:0], init[4*g*ldc:]...)
					k.packed(kc, a, b, got, ldc, acc)
					sameBits(t, k.name+" packed", kc, acc, want[4*g*ldc:], got)
					if k.half != nil { // the first 32 columns of the 64-wide panel
						half := make([]float32, 32*kc)
						for kk := range kc {
							copy(half[32*kk:32*kk+32], b[64*kk:64*kk+32])
						}
						wantHalf := append([]float32(nil), init[4*g*ldc:]...)
						tileFMAN(kc, 32, a, half, wantHalf, ldc, acc)
						got = append(got[:0], init[4*g*ldc:]...)
						k.half(kc, aRows[g*gstride:], lda, 1, gstride, 1, b, got, ldc, acc)
						sameBits(t, k.name+" half", kc, acc, wantHalf, got)
					}
				}
				k.groups(kc, aRows, lda, 1, gstride, groups, b, gotGroups, ldc, acc)
				sameBits(t, k.name+" groups", kc, acc, want, gotGroups)
			}
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
