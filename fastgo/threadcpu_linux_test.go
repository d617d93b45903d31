package fastgo

import (
	"syscall"
	"unsafe"
)

// threadCPUNS is the CPU time of the calling OS thread in nanoseconds (Linux
// CLOCK_THREAD_CPUTIME_ID), or -1 if it cannot be read.
func threadCPUNS() int64 {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return -1
	}
	return ts.Nano()
}
