//go:build amd64

package fastgo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelAVX512SameBits is TestKernelAsmSameBits for the AVX-512 assembly kernels, 4×32
// (kernel_avx512_amd64.s) and 4×64 (kernel_avx512x64_amd64.s): against tileFMAN on A's rows in
// place (one group), the packed [kc, 4] panel, and several row groups in one call (rows and
// groups a stride apart, padding of NaN between them), and the 4×64 kernel's rowsHalf (the 4×32
// kernel on the first half of a 64-wide panel), for every kc 0…37 and 128, 131, with and
// without accumulate, NaN and Inf included, and no byte of C outside the tiles written.
func TestKernelAVX512SameBits(t *testing.T) {
	if _, ok := asmKernelF32AVX512(); !ok {
		t.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 3))
	const ldc = 67 // c rows wider than 64 and not a multiple of 16
	kcs := []int{128, 131}
	for kc := range 38 {
		kcs = append(kcs, kc)
	}
	type kernel struct {
		name   string
		nr     int
		packed func(kc int, a, b, c []float32, ldc int, accumulate bool)
		groups func(kc int, a []float32, lda, astride, gstride, groups int, b, c []float32, ldc int, accumulate bool)
	}
	for _, k := range []kernel{
		{"4×32", 32, kernelF32x16Asm, kernelF32x16GroupsAsm},
		{"4×64", 64, kernelF32x64Asm, kernelF32x64GroupsAsm},
	} {
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
					if k.nr == 64 { // rowsHalf: the first 32 columns of the 64-wide panel
						half := make([]float32, 32*kc)
						for kk := range kc {
							copy(half[32*kk:32*kk+32], b[64*kk:64*kk+32])
						}
						wantHalf := append([]float32(nil), init[4*g*ldc:]...)
						tileFMAN(kc, 32, a, half, wantHalf, ldc, acc)
						got = append(got[:0], init[4*g*ldc:]...)
						row := func(r int) []float32 { return aRows[g*gstride+r*lda:][:kc] }
						kernelF32x64RowsHalf(kc, row(0), row(1), row(2), row(3), b, got, ldc, acc)
						sameBits(t, k.name+" rowsHalf", kc, acc, wantHalf, got)
					}
				}
				k.groups(kc, aRows, lda, 1, gstride, groups, b, gotGroups, ldc, acc)
				sameBits(t, k.name+" groups", kc, acc, want, gotGroups)
			}
		}
	}
}

// TestKernelAVX512Bounds: the AVX-512 kernel's Go wrappers panic on operands too short for what
// the kernel would read or write, before it runs.
func TestKernelAVX512Bounds(t *testing.T) {
	if _, ok := asmKernelF32AVX512(); !ok {
		t.Skip("no AVX-512 on this CPU")
	}
	const kc, ldc = 8, 32
	a, b, c := make([]float32, 4*kc), make([]float32, 32*kc), make([]float32, 8*ldc)
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"rows: the last row short", func() { kernelF32x16GroupsAsm(kc, a[:4*kc-1], kc, 1, 4*kc, 1, b, c, ldc, false) }},
		{"packed: B short", func() { kernelF32x16Asm(kc, a, b[:32*kc-1], c, ldc, false) }},
		{"packed: C short", func() { kernelF32x16Asm(kc, a, b, c[:3*ldc+31], ldc, false) }},
		{"groups: A short", func() { kernelF32x16GroupsAsm(kc, a, kc, 1, 4*kc, 2, b, c, ldc, false) }},
		{"groups: C short", func() { kernelF32x16GroupsAsm(kc, a, 1, 4, 0, 3, b, c, ldc, false) }},
		{"4×64 packed: B short", func() { kernelF32x64Asm(kc, a, make([]float32, 64*kc-1), make([]float32, 4*64), 64, false) }},
		{"4×64 packed: C short", func() { kernelF32x64Asm(kc, a, make([]float32, 64*kc), make([]float32, 3*64+63), 64, false) }},
		{"4×64 rowsHalf: B short", func() {
			kernelF32x64RowsHalf(kc, a, a, a, a[:kc-1], make([]float32, 64*kc), make([]float32, 4*32), 32, false)
		}},
		{"4×64 rowsHalf: a row short", func() {
			kernelF32x64RowsHalf(kc, a, a, a, a, make([]float32, 64*(kc-1)+31), make([]float32, 4*32), 32, false)
		}},
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
