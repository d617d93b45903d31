//go:build amd64

package fastgo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelAVX512SameBits is TestKernelAsmSameBits for the AVX-512 assembly kernel
// (kernel_avx512_amd64.s): against tileFMAN on A's rows in place (one group), the packed
// [kc, 4] panel, and several row groups in one call (rows and groups a stride apart, padding of
// NaN between them), for every kc 0…37 and 128, 131, with and without accumulate, NaN and Inf
// included, and no byte of C outside the tiles written.
func TestKernelAVX512SameBits(t *testing.T) {
	if _, ok := asmKernelF32AVX512(); !ok {
		t.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 3))
	const ldc = 37 // c rows wider than 32 and not a multiple of 16
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
		_, b := randTileOperandsN(rng, kc, 32) // every group against the same B
		for _, acc := range []bool{false, true} {
			want := append([]float32(nil), init...)
			gotGroups := append([]float32(nil), init...)
			for g := range groups {
				a, _ := randTileOperandsN(rng, kc, 32)
				for k := range kc {
					for r := range 4 {
						aRows[g*gstride+r*lda+k] = a[4*k+r]
					}
				}
				tileFMAN(kc, 32, a, b, want[4*g*ldc:], ldc, acc)
				got := append([]float32(nil), init[4*g*ldc:]...)
				kernelF32x16GroupsAsm(kc, aRows[g*gstride:], lda, 1, gstride, 1, b, got, ldc, acc)
				sameBits(t, "kernelF32x16GroupsAsm, one group", kc, acc, want[4*g*ldc:], got)
				got = append(got[:0], init[4*g*ldc:]...)
				kernelF32x16Asm(kc, a, b, got, ldc, acc)
				sameBits(t, "kernelF32x16Asm", kc, acc, want[4*g*ldc:], got)
			}
			kernelF32x16GroupsAsm(kc, aRows, lda, 1, gstride, groups, b, gotGroups, ldc, acc)
			sameBits(t, "kernelF32x16GroupsAsm", kc, acc, want, gotGroups)
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
