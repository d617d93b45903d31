//go:build goexperiment.simd && amd64 && !go1.27

#include "textflag.h"

// func prefetchAddr(addr uintptr, n int): PREFETCHT0 at addr, addr+64, … while below addr+n.
TEXT ·prefetchAddr(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE done
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	SUBQ $64, CX
	JG loop
done:
	RET
