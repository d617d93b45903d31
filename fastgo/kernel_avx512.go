//go:build amd64

package fastgo

// The AVX-512 float32 micro-kernels, in assembly: kernel_avx2.go's kernel with ZMM registers, a
// 4×32 tile of C in 8 accumulators (kernel_avx512_amd64.s), each k loading B's row (2 vectors)
// and broadcasting A's 4 values straight from memory, then 8 FMAs; and the one the GEMM runs, a
// 4×64 tile in 16 accumulators (kernel_avx512x64_amd64.s: 4 vectors of B, 16 FMAs a k).
//
// Why assembly here too: the archsimd 4×32 kernel (kernel_simd.go) broadcasts A's values
// register to register, a shuffle µop; on Intel cores the 512-bit shuffles and one of the two
// 512-bit FMA pipes share port 5, so 4 broadcasts per 8 FMAs take FMA slots.
// BenchmarkMicroKernelAVX512AB (kc = 128, panels in L1, medians of interleaved rounds of
// per-thread CPU time, GFLOP/cpu-s) on a 2-core Intel Xeon with AVX-512, 3 runs: this kernel
// 135–139 on A's rows in place and on a packed A, against 100–104 and 93–95 for the archsimd
// kernel; 8 independent register FMA chains, the ceiling of an 8-accumulator tile, 147–148.
// (16 register chains in archsimd run at 59: Go's register allocator keeps SIMD values in
// X0–X15 only, so an archsimd tile cannot grow past 8 accumulators either.) BenchmarkMHA, the
// two binaries alternated, CPU ms a pass: seed003 132 → 99, seed003_causal 139 → 110, long
// 718–740 → 558–607, llm 996–1056 → 761–824. The 4×64 tile (16 accumulators, kc = 128; the
// same round: 166 GFLOP/cpu-s against 145 for 4×32 on the same panels; 12 register chains,
// the machine's FMA ceiling, 203) then: seed003 95–99 → 85–87, long_causal 384–390 → 350–353;
// long and llm, whose time goes to writing the scores, unchanged.

// The kernel needs no GOEXPERIMENT: it runs in every amd64 build where the CPU and the OS have
// AVX-512 F (golang.org/x/sys/cpu). Like the AVX2 kernel each output is the FMA chain over k in
// order from zero, then added to C with accumulate: the same bits as the archsimd kernels
// (kernel_avx512_test.go). The 4×32 kernel uses Z0–Z13, the 4×64 one Z0–Z23; both end with
// VZEROUPPER.

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// asmKernelF32AVX512 returns the AVX-512 assembly float32 kernel, and false where the CPU (or
// the OS, which must save the ZMM registers: cpu.X86.HasAVX512F checks) lacks AVX-512 F: 4×64
// tiles (kernelF32x64Groups, 16 accumulators) with kc = 128, so that a B micro-panel, 32 KiB,
// stays in L1 (a 256-deep one, 64 KiB, does not: 148 GFLOP/cpu-s instead of 166 in
// BenchmarkMicroKernelAVX512AB's round); the last column panel of a product with at most 32
// columns left runs the 4×32 kernel on the panel's first half (rowsHalf: attention's dv + 1 =
// 65 columns).
func asmKernelF32AVX512() (microKernel[float32], bool) {
	if !cpu.X86.HasAVX512F {
		return microKernel[float32]{}, false
	}
	return microKernel[float32]{name: "avx512-4x64", mr: 4, nr: 64, kc: 128, fn: kernelF32x64Asm, groups: kernelF32x64GroupsAsm, rowsHalf: kernelF32x64RowsHalf}, true
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

// kernelF32x16Asm is the kernel on a packed micro-panel A: [kc, 4] (one group).
func kernelF32x16Asm(kc int, a, b, c []float32, ldc int, accumulate bool) {
	kernelF32x16GroupsAsm(kc, a, 1, 4, 4*kc, 1, b, c, ldc, accumulate)
}

// kernelF32x16GroupsAsm runs kernelF32x32Groups on elements: group g < groups reads A's value
// of row r < 4 at column k < kc at a[g·gstride + r·lda + k·astride] and writes the 4×32 tile of
// c at row 4g (rows ldc apart). It panics (index out of range) before the kernel reads or
// writes outside a, b or c.
func kernelF32x16GroupsAsm(kc int, a []float32, lda, astride, gstride, groups int, b, c []float32, ldc int, accumulate bool) {
	groupsAsm(kernelF32x32Panel, 32, kc, a, lda, astride, gstride, groups, b, c, ldc, accumulate)
}

// kernelF32x32Panel is kernelF32x32Groups on a whole [kc, 32] B micro-panel.
func kernelF32x32Panel(kc int, a unsafe.Pointer, lda, astride, gstride uintptr, groups int, b, c unsafe.Pointer, ldc uintptr, accumulate bool) {
	kernelF32x32Groups(kc, a, lda, astride, gstride, groups, b, c, ldc, accumulate, 128)
}

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

// kernelF32x64GroupsAsm is kernelF32x16GroupsAsm with 4×64 tiles (B: [kc, 64]).
func kernelF32x64GroupsAsm(kc int, a []float32, lda, astride, gstride, groups int, b, c []float32, ldc int, accumulate bool) {
	groupsAsm(kernelF32x64Groups, 64, kc, a, lda, astride, gstride, groups, b, c, ldc, accumulate)
}

// kernelF32x64RowsHalf is microKernel.rowsHalf for the 4×64 kernel: the 4×32 tile of c (rows
// ldc apart) from A's rows a0…a3 (kc values each, packed into a [kc, 4] panel first) and the
// first 32 columns of the B micro-panel b: [kc, 64].
func kernelF32x64RowsHalf(kc int, a0, a1, a2, a3, b, c []float32, ldc int, accumulate bool) {
	_ = c[3*ldc+31]
	if kc <= 0 {
		kernelF32x32Groups(0, nil, 0, 0, 0, 1, nil, unsafe.Pointer(&c[0]), uintptr(4*ldc), accumulate, 256)
		return
	}
	var buf [4 * 128]float32
	a := buf[:]
	if 4*kc > len(buf) {
		a = make([]float32, 4*kc)
	}
	_, _, _, _ = a0[kc-1], a1[kc-1], a2[kc-1], a3[kc-1] // each row's kc values (an index checks the length)
	a0, a1, a2, a3 = a0[:kc], a1[:kc], a2[:kc], a3[:kc]
	for k := range kc {
		a[4*k], a[4*k+1], a[4*k+2], a[4*k+3] = a0[k], a1[k], a2[k], a3[k]
	}
	_ = b[64*(kc-1)+31] // row kc−1's first half
	kernelF32x32Groups(kc, unsafe.Pointer(&a[0]), 4, 16, 16*uintptr(kc), 1, unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), uintptr(4*ldc), accumulate, 256)
}
