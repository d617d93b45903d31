//go:build amd64

package fastgo

// The AVX2 float32 micro-kernel, in assembly (kernel_avx2_amd64.s): a 4×16 tile of C in 8
// accumulators, each k loading B's row (2 vectors) and broadcasting A's 4 values straight from
// memory (VBROADCASTSS m32), then 8 FMAs.
//
// Why assembly: archsimd has no broadcast from memory. BroadcastFloat32x8 is VMOVSS into an XMM
// register, then VBROADCASTSS register to register (no SSA rule folds the load; simdAMD64.rules'
// load folding is for EVEX forms only), and on Zen 3 that register broadcast is a shuffle µop on
// the FP pipes the FMAs need: archsimd 4×16 kernels broadcasting in registers (gone since this
// kernel) ran at ~48 GFLOP/cpu-s however they were unrolled. The memory
// broadcast is a plain load µop: 6 loads per 8 FMAs. Before this kernel, the GEMM stored every A
// value as a whole vector ([kc, 4, 8], filled while the first column tile was computed at the
// register-broadcast speed) and the other tiles loaded those: ~80 GFLOP/cpu-s for those tiles,
// ~49 for the first, and a 16 KiB panel in L1 beside B's.
//
// BenchmarkMicroKernelAVX2AB (kc = 128, panels in L1, medians of interleaved rounds of
// per-thread CPU time, GFLOP/cpu-s), 3 runs: this kernel on a packed A 95–98 and on A's rows in
// place 90–92, against 78–80 for the pre-broadcast kernel, 48–49 for the archsimd kernel and ~49
// for the fill kernel; 12 independent register FMA chains, the FMA ceiling, 95–97.
//
// The kernel runs a column of row groups against one B micro-panel (kernelF32x8GroupsAsm:
// microKernel.groups), so that the GEMM's Go loop runs once per column tile, not once per tile,
// or one tile of a packed panel (kernelF32x8Asm: microKernel.fn). A's rows are read in place
// when they lie a constant stride apart; otherwise the GEMM packs them. Each output is the
// FMA chain over k in order from zero, then added to C with accumulate (tileFMA in
// kernel_avx2_asm_test.go is that definition in plain Go; the test checks the bits).
// It uses Y0–Y13 and ends with VZEROUPPER (doc.go, "Clean upper halves"); Go's ABI wrapper
// restores X15 after it.
//
// Assembly needs no GOEXPERIMENT: the kernel runs in every amd64 build where the CPU has AVX2
// and FMA (golang.org/x/sys/cpu), a plain `go build` or `go run` too, where the float32 GEMM
// would otherwise run the plain-Go kernel ~20× slower (BenchmarkMHA/seed003 and long).

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// asmKernelF32 returns the AVX2 assembly float32 kernel, and false where the CPU (or the OS,
// which must save the YMM registers: cpu.X86.HasAVX2 checks) lacks AVX2 or FMA.
func asmKernelF32() (microKernel[float32], bool) {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		return microKernel[float32]{}, false
	}
	return microKernel[float32]{name: "avx2-4x16", mr: 4, nr: 16, fn: kernelF32x8Asm, groups: kernelF32x8GroupsAsm}, true
}

// kernelF32x16Groups (kernel_avx2_amd64.s) computes `groups` 4×16 tiles of C one after another,
// all against the same B micro-panel b: [kc, 16]. Tile g is at c + g·4·ldc (ldc in bytes); its
// element (r, j), r < 4, j < 16, is the FMA chain over k < kc in order from zero of A(g, r, k)·
// b[16k + j], then added to C with accumulate, else stored there, where A(g, r, k) is the float32
// at a + g·gstride + r·lda + k·astride (bytes).
//
//go:noescape
func kernelF32x16Groups(kc int, a unsafe.Pointer, lda, astride, gstride uintptr, groups int, b, c unsafe.Pointer, ldc uintptr, accumulate bool)

// kernelF32x8Asm is the kernel on a packed micro-panel A: [kc, 4] (one group).
func kernelF32x8Asm(kc int, a, b, c []float32, ldc int, accumulate bool) {
	kernelF32x8GroupsAsm(kc, a, 1, 4, 4*kc, 1, b, c, ldc, accumulate)
}

// kernelF32x8GroupsAsm runs kernelF32x16Groups on elements: group g < groups reads A's value of
// row r < 4 at column k < kc at a[g·gstride + r·lda + k·astride] and writes the 4×16 tile of c
// at row 4g (rows ldc apart). It panics (index out of range) before the kernel reads or writes
// outside a, b or c.
func kernelF32x8GroupsAsm(kc int, a []float32, lda, astride, gstride, groups int, b, c []float32, ldc int, accumulate bool) {
	groupsAsm(kernelF32x16Groups, 16, 16, kc, a, lda, astride, gstride, groups, b, c, ldc, accumulate)
}

// asmGroups is the signature of the assembly kernels' loops over row groups (kernelF32x16Groups
// and its AVX-512 siblings): addresses and strides in bytes.
type asmGroups func(kc int, a unsafe.Pointer, lda, astride, gstride uintptr, groups int, b, c unsafe.Pointer, ldc uintptr, accumulate bool)

// groupsAsm runs the assembly kernel run, of 4×nr tiles, on elements as kernelF32x8GroupsAsm
// describes (B's rows bstride elements apart: a [kc, nr] micro-panel, or the first nr columns
// of a wider one), after checking that every element it reads or writes is in a, b or c (an
// index out of range panics first).
func groupsAsm(run asmGroups, nr, bstride, kc int, a []float32, lda, astride, gstride, groups int, b, c []float32, ldc int, accumulate bool) {
	if groups <= 0 {
		return
	}
	_ = c[(4*groups-1)*ldc+nr-1]
	if kc <= 0 {
		run(0, nil, 0, 0, 0, groups, nil, unsafe.Pointer(&c[0]), uintptr(4*ldc), accumulate)
		return
	}
	_ = a[(groups-1)*gstride+3*lda+(kc-1)*astride] // the last group's last row's last value
	_ = b[bstride*(kc-1)+nr-1]                     // B's last row
	run(kc, unsafe.Pointer(&a[0]), uintptr(4*lda), uintptr(4*astride), uintptr(4*gstride), groups,
		unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), uintptr(4*ldc), accumulate)
}
