//go:build amd64

package fastgo

import (
	"math/rand/v2"
	"testing"
)

// TestKernelAVX512SameBits is TestKernelAsmSameBits for the AVX-512 assembly kernel, 4×64
// (kernel_avx512x64_amd64.s), and its half tile (the 4×32 kernel of kernel_avx512_amd64.s on
// the first half of a 64-wide panel): checkAsmKernelBits.
func TestKernelAVX512SameBits(t *testing.T) {
	if _, ok := asmKernelF32AVX512(); !ok {
		t.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 3))
	checkAsmKernelBits(t, rng, 67, // c rows wider than 64, not a multiple of 16
		asmKernelCase{"4×64", 64, kernelF32x64Asm, kernelF32x64GroupsAsm, kernelF32x64HalfGroupsAsm})
}

// TestKernelAVX512Bounds: the AVX-512 kernel's Go wrappers panic on operands too short for what
// the kernel would read or write, before it runs.
func TestKernelAVX512Bounds(t *testing.T) {
	if _, ok := asmKernelF32AVX512(); !ok {
		t.Skip("no AVX-512 on this CPU")
	}
	const kc, ldc = 8, 64
	a, b, c := make([]float32, 4*kc), make([]float32, 64*kc), make([]float32, 8*ldc)
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"rows: the last row short", func() { kernelF32x64GroupsAsm(kc, a[:4*kc-1], kc, 1, 4*kc, 1, b, c, ldc, false) }},
		{"packed: B short", func() { kernelF32x64Asm(kc, a, b[:64*kc-1], c, ldc, false) }},
		{"packed: C short", func() { kernelF32x64Asm(kc, a, b, c[:3*ldc+63], ldc, false) }},
		{"groups: A short", func() { kernelF32x64GroupsAsm(kc, a, kc, 1, 4*kc, 2, b, c, ldc, false) }},
		{"groups: C short", func() { kernelF32x64GroupsAsm(kc, a, 1, 4, 0, 3, b, c, ldc, false) }},
		{"half: the last row short", func() { kernelF32x64HalfGroupsAsm(kc, a[:4*kc-1], kc, 1, 4*kc, 1, b, c, ldc, false) }},
		{"half: B short", func() { kernelF32x64HalfGroupsAsm(kc, a, kc, 1, 4*kc, 1, b[:64*(kc-1)+31], c, ldc, false) }},
		{"half: C short", func() { kernelF32x64HalfGroupsAsm(kc, a, kc, 1, 4*kc, 1, b, c[:3*ldc+31], ldc, false) }},
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
