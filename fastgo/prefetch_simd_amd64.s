//go:build goexperiment.simd && amd64 && !go1.27

#include "textflag.h"

// func prefetchLines(p unsafe.Pointer, n int): PREFETCHT0 at p, p+64, … while below p+n.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
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

// func prefetchAddr(addr uintptr, n int): prefetchLines' loop on an address.
TEXT ·prefetchAddr(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE end
next:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	SUBQ $64, CX
	JG next
end:
	RET
