//go:build amd64

#include "textflag.h"

// STEP is one k of a 4×32 tile: B's row k (2 vectors: boff(BX), boff+64(BX)) times A's four
// values of column k, each broadcast from memory (VBROADCASTSS m32 into a ZMM register: a load
// µop, not a shuffle on the FMA ports), into the accumulators Z0…Z7 (row r: Z2r, Z2r+1). A's
// value of row r at column k is at Rr + R12, r = 0…3 in R8…R11, and R12 = k·astride bytes (DX).
#define STEP(boff) \
	VMOVUPS boff(BX), Z8 \
	VMOVUPS boff+64(BX), Z9 \
	VBROADCASTSS (R8)(R12*1), Z10 \
	VFMADD231PS Z8, Z10, Z0 \
	VFMADD231PS Z9, Z10, Z1 \
	VBROADCASTSS (R9)(R12*1), Z11 \
	VFMADD231PS Z8, Z11, Z2 \
	VFMADD231PS Z9, Z11, Z3 \
	VBROADCASTSS (R10)(R12*1), Z12 \
	VFMADD231PS Z8, Z12, Z4 \
	VFMADD231PS Z9, Z12, Z5 \
	VBROADCASTSS (R11)(R12*1), Z13 \
	VFMADD231PS Z8, Z13, Z6 \
	VFMADD231PS Z9, Z13, Z7 \
	ADDQ DX, R12

// func kernelF32x32Groups(kc int, a unsafe.Pointer, lda, astride, gstride uintptr, groups int, b, c unsafe.Pointer, ldc uintptr, accumulate bool, bstride uintptr)
//
// For g < groups: the 4×32 tile of C at c + g·4·ldc (ldc in bytes) from the four rows of A at
// a + g·gstride + r·lda (r < 4), k·astride bytes apart, and the first 32 columns of the B
// micro-panel b, whose rows are bstride bytes apart (128: a [kc, 32] panel; 256: the first half
// of a [kc, 64] one).
// R8 holds the group's row 0 (R9–R11 its rows 1–3 during the loop, then C's rows 1–3).
// The same code as kernelF32x16Groups (kernel_avx2_amd64.s) with ZMM registers.
TEXT ·kernelF32x32Groups(SB), NOSPLIT, $0-88
	MOVQ groups+40(FP), R13
	TESTQ R13, R13
	JLE done
	MOVQ a+8(FP), R8
	MOVQ c+56(FP), DI
	MOVQ ldc+64(FP), SI
	MOVQ astride+24(FP), DX
	MOVQ bstride+80(FP), R14
group:
	// Ask for the next group's 4 rows of C now (each 128 bytes, maybe across three lines).
	LEAQ (DI)(SI*4), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 127(AX)
	ADDQ SI, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 127(AX)
	ADDQ SI, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 127(AX)
	ADDQ SI, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 127(AX)
	MOVQ lda+16(FP), AX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	MOVQ b+48(FP), BX
	MOVQ kc+0(FP), CX
	XORQ R12, R12
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	MOVQ CX, AX
	SHRQ $2, AX
	JZ tail
loop4:
	STEP(0)
	ADDQ R14, BX
	STEP(0)
	ADDQ R14, BX
	STEP(0)
	ADDQ R14, BX
	STEP(0)
	ADDQ R14, BX
	DECQ AX
	JNZ loop4
tail:
	ANDQ $3, CX
	JZ store
loop1:
	STEP(0)
	ADDQ R14, BX
	DECQ CX
	JNZ loop1
store:
	LEAQ (DI)(SI*1), R9
	LEAQ (R9)(SI*1), R10
	LEAQ (R10)(SI*1), R11
	MOVBLZX accumulate+72(FP), AX
	TESTB AL, AL
	JZ write
	VADDPS (DI), Z0, Z0
	VADDPS 64(DI), Z1, Z1
	VADDPS (R9), Z2, Z2
	VADDPS 64(R9), Z3, Z3
	VADDPS (R10), Z4, Z4
	VADDPS 64(R10), Z5, Z5
	VADDPS (R11), Z6, Z6
	VADDPS 64(R11), Z7, Z7
write:
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, (R9)
	VMOVUPS Z3, 64(R9)
	VMOVUPS Z4, (R10)
	VMOVUPS Z5, 64(R10)
	VMOVUPS Z6, (R11)
	VMOVUPS Z7, 64(R11)
	LEAQ (R11)(SI*1), DI
	ADDQ gstride+32(FP), R8
	DECQ R13
	JNZ group
	VZEROUPPER
done:
	RET
