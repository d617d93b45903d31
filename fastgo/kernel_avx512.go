//go:build amd64

package fastgo

// The AVX-512 float32 micro-kernels, in assembly: kernel_avx2.go's kernel with ZMM registers, a
// 4×32 tile of C in 8 accumulators (kernel_avx512_amd64.s), each k loading B's row (2 vectors)
// and broadcasting A's 4 values straight from memory, then 8 FMAs; and the one the GEMM runs, a
// 4×64 tile in 16 accumulators (kernel_avx512x64_amd64.s: 4 vectors of B, 16 FMAs a k).
//
// Why assembly here too: archsimd has no broadcast from memory, and its register broadcast is a
// shuffle µop; on Intel cores the 512-bit shuffles and one of the two 512-bit FMA pipes share
// port 5, so an archsimd 4×32 kernel's 4 broadcasts per 8 FMAs took FMA slots. And Go's
// register allocator keeps SIMD values in X0–X15 only, so an archsimd tile cannot grow past 8
// accumulators (16 register chains in archsimd run at 59 GFLOP/cpu-s, spilling).
// BenchmarkMicroKernelAVX512AB's rounds (kc = 128, panels in L1, medians of interleaved rounds
// of per-thread CPU time, GFLOP/cpu-s) on a 2-core Intel Xeon with AVX-512: the archsimd 4×32
// kernel (gone since) 93–104; the 4×32 assembly kernel 135–139; the 4×64 one 166 (145 for 4×32
// on the same panels); 8 independent register FMA chains 147–165, 12 (the machine's FMA
// ceiling) 203. BenchmarkMHA, the two binaries alternated, CPU ms a pass: archsimd → 4×32
// assembly: seed003 132 → 99, seed003_causal 139 → 110, long 718–740 → 558–607, llm
// 996–1056 → 761–824; 4×32 → 4×64: seed003 95–99 → 85–87, long_causal 384–390 → 350–353;
// long and llm, whose time goes to writing the scores, unchanged.

// The kernel needs no GOEXPERIMENT: it runs in every amd64 build where the CPU and the OS have
// AVX-512 F (golang.org/x/sys/cpu). Like the AVX2 kernel each output is the FMA chain over k in
// order from zero, then added to C with accumulate (kernel_avx512_test.go). The 4×32 kernel
// uses Z0–Z13, the 4×64 one Z0–Z23; both end with VZEROUPPER.

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// asmKernelF32AVX512 returns the AVX-512 assembly float32 kernel, and false where the CPU (or
// the OS, which must save the ZMM registers: cpu.X86.HasAVX512F checks) lacks AVX-512 F: 4×64
// tiles (kernelF32x64Groups, 16 accumulators) with kc = 128, so that a B micro-panel, 32 KiB,
// stays in L1 (a 256-deep one, 64 KiB, does not: 148 GFLOP/cpu-s instead of 166 in
// BenchmarkMicroKernelAVX512AB's round); the last column panel of a product with at most 32
// columns left runs the 4×32 kernel on the panel's first half (half: attention's dv + 1 = 65
// columns).
func asmKernelF32AVX512() (microKernel[float32], bool) {
	if !cpu.X86.HasAVX512F {
		return microKernel[float32]{}, false
	}
	return microKernel[float32]{name: "avx512-4x64", mr: 4, nr: 64, kc: 128, fn: kernelF32x64Asm, groups: kernelF32x64GroupsAsm, half: kernelF32x64HalfGroupsAsm}, true
}

// kernelF32x32Groups (kernel_avx512_amd64.s) is kernelF32x16Groups (kernel_avx2.go) with tiles
// 4×32 and B's rows bstride bytes apart (128: a [kc, 32] micro-panel; 256: the first half of a
// [kc, 64] one): tile g is at c + g·4·ldc (ldc in bytes); its element (r, j), r < 4, j < 32, is
// the FMA chain over k < kc in order from zero of A(g, r, k)·B(k, j), then added to C with
// accumulate, else stored there, where A(g, r, k) is the float32 at a + g·gstride + r·lda +
// k·astride and B(k, j) the one at b + k·bstride + 4j (bytes).
//
//go:noescape
func kernelF32x32Groups(kc int, a unsafe.Pointer, lda, astride, gstride uintptr, groups int, b, c unsafe.Pointer, ldc uintptr, accumulate bool, bstride uintptr)

// kernelF32x64Groups (kernel_avx512x64_amd64.s) is kernelF32x32Groups with 4×64 tiles and B
// micro-panels [kc, 64]: 16 accumulators (Z0–Z15), each k 4 loads of B, 4 broadcasts of A from
// memory and 16 FMAs.
//
//go:noescape
func kernelF32x64Groups(kc int, a unsafe.Pointer, lda, astride, gstride uintptr, groups int, b, c unsafe.Pointer, ldc uintptr, accumulate bool)

// kernelF32x64Asm is the 4×64 kernel on a packed micro-panel A: [kc, 4] (one group).
func kernelF32x64Asm(kc int, a, b, c []float32, ldc int, accumulate bool) {
	kernelF32x64GroupsAsm(kc, a, 1, 4, 4*kc, 1, b, c, ldc, accumulate)
}

// kernelF32x64GroupsAsm runs kernelF32x64Groups on elements: group g < groups reads A's value
// of row r < 4 at column k < kc at a[g·gstride + r·lda + k·astride] and writes the 4×64 tile of
// c at row 4g (rows ldc apart). It panics (index out of range) before the kernel reads or
// writes outside a, b or c.
func kernelF32x64GroupsAsm(kc int, a []float32, lda, astride, gstride, groups int, b, c []float32, ldc int, accumulate bool) {
	groupsAsm(kernelF32x64Groups, 64, 64, kc, a, lda, astride, gstride, groups, b, c, ldc, accumulate)
}

// kernelF32x64HalfGroupsAsm is microKernel.half for the 4×64 kernel: kernelF32x64GroupsAsm
// for the first 32 columns of the B micro-panel b: [kc, 64] only (4×32 tiles of c).
func kernelF32x64HalfGroupsAsm(kc int, a []float32, lda, astride, gstride, groups int, b, c []float32, ldc int, accumulate bool) {
	groupsAsm(kernelF32x32HalfOf64, 32, 64, kc, a, lda, astride, gstride, groups, b, c, ldc, accumulate)
}

// kernelF32x32HalfOf64 is kernelF32x32Groups on the first half of a [kc, 64] B micro-panel.
func kernelF32x32HalfOf64(kc int, a unsafe.Pointer, lda, astride, gstride uintptr, groups int, b, c unsafe.Pointer, ldc uintptr, accumulate bool) {
	kernelF32x32Groups(kc, a, lda, astride, gstride, groups, b, c, ldc, accumulate, 256)
}
