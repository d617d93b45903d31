//go:build amd64

#include "textflag.h"

// STEP is one k of a 4×16 tile: B's row k (2 vectors: boff(BX), boff+32(BX)) times A's four
// values of column k, each broadcast from memory (VBROADCASTSS m32: a load µop; archsimd has no
// memory broadcast, kernel_avx2.go), into the accumulators Y0…Y7 (row r: Y2r, Y2r+1). A's value
// of row r at column k is at Rr + R12, r = 0…3 in R8…R11, and R12 = k·astride bytes (DX).
#define STEP(boff) \
	VMOVUPS boff(BX), Y8 \
	VMOVUPS boff+32(BX), Y9 \
	VBROADCASTSS (R8)(R12*1), Y10 \
	VFMADD231PS Y8, Y10, Y0 \
	VFMADD231PS Y9, Y10, Y1 \
	VBROADCASTSS (R9)(R12*1), Y11 \
	VFMADD231PS Y8, Y11, Y2 \
	VFMADD231PS Y9, Y11, Y3 \
	VBROADCASTSS (R10)(R12*1), Y12 \
	VFMADD231PS Y8, Y12, Y4 \
	VFMADD231PS Y9, Y12, Y5 \
	VBROADCASTSS (R11)(R12*1), Y13 \
	VFMADD231PS Y8, Y13, Y6 \
	VFMADD231PS Y9, Y13, Y7 \
	ADDQ DX, R12

// func kernelF32x16Groups(kc int, a unsafe.Pointer, lda, astride, gstride uintptr, groups int, b, c unsafe.Pointer, ldc uintptr, accumulate bool)
//
// For g < groups: the 4×16 tile of C at c + g·4·ldc (ldc in bytes) from the four rows of A at
// a + g·gstride + r·lda (r < 4), k·astride bytes apart, and the B micro-panel b: [kc, 16].
// R8 holds the group's row 0 (R9–R11 its rows 1–3 during the loop, then C's rows 1–3).
TEXT ·kernelF32x16Groups(SB), NOSPLIT, $0-73
	MOVQ groups+40(FP), R13
	TESTQ R13, R13
	JLE done
	MOVQ a+8(FP), R8
	MOVQ c+56(FP), DI
	MOVQ ldc+64(FP), SI
	MOVQ astride+24(FP), DX
group:
	// Ask for the next group's 4 rows of C now (each 64 bytes, maybe across two lines): its
	// stores then find them in the cache instead of waiting for memory at the end of its k loop.
	LEAQ (DI)(SI*4), AX
	PREFETCHT0 (AX)
	PREFETCHT0 63(AX)
	ADDQ SI, AX
	PREFETCHT0 (AX)
	PREFETCHT0 63(AX)
	ADDQ SI, AX
	PREFETCHT0 (AX)
	PREFETCHT0 63(AX)
	ADDQ SI, AX
	PREFETCHT0 (AX)
	PREFETCHT0 63(AX)
	MOVQ lda+16(FP), AX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	MOVQ b+48(FP), BX
	MOVQ kc+0(FP), CX
	XORQ R12, R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ CX, AX
	SHRQ $2, AX
	JZ tail
loop4:
	STEP(0)
	STEP(64)
	STEP(128)
	STEP(192)
	ADDQ $256, BX
	DECQ AX
	JNZ loop4
tail:
	ANDQ $3, CX
	JZ store
loop1:
	STEP(0)
	ADDQ $64, BX
	DECQ CX
	JNZ loop1
store:
	LEAQ (DI)(SI*1), R9
	LEAQ (R9)(SI*1), R10
	LEAQ (R10)(SI*1), R11
	MOVBLZX accumulate+72(FP), AX
	TESTB AL, AL
	JZ write
	VADDPS (DI), Y0, Y0
	VADDPS 32(DI), Y1, Y1
	VADDPS (R9), Y2, Y2
	VADDPS 32(R9), Y3, Y3
	VADDPS (R10), Y4, Y4
	VADDPS 32(R10), Y5, Y5
	VADDPS (R11), Y6, Y6
	VADDPS 32(R11), Y7, Y7
write:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (R9)
	VMOVUPS Y3, 32(R9)
	VMOVUPS Y4, (R10)
	VMOVUPS Y5, 32(R10)
	VMOVUPS Y6, (R11)
	VMOVUPS Y7, 32(R11)
	LEAQ (R11)(SI*1), DI
	ADDQ gstride+32(FP), R8
	DECQ R13
	JNZ group
	VZEROUPPER
done:
	RET
