//go:build amd64

package fastgo

import (
	"math/rand/v2"
	"testing"
)

// TestKernelAVX512SameBits is TestKernelAsmSameBits for the AVX-512 assembly kernels, 4×32
// (kernel_avx512_amd64.s) and 4×64 (kernel_avx512x64_amd64.s) with its rowsHalf (the 4×32
// kernel on the first half of a 64-wide panel): checkAsmKernelBits.
func TestKernelAVX512SameBits(t *testing.T) {
	if _, ok := asmKernelF32AVX512(); !ok {
		t.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 3))
	checkAsmKernelBits(t, rng, 67, // c rows wider than 64, not a multiple of 16
		asmKernelCase{"4×32", 32, kernelF32x16Asm, kernelF32x16GroupsAsm, nil},
		asmKernelCase{"4×64", 64, kernelF32x64Asm, kernelF32x64GroupsAsm, kernelF32x64RowsHalf})
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
