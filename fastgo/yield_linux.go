//go:build linux

package fastgo

import "syscall"

// osYield gives the calling thread's core to another runnable thread, if any (sched_yield; a
// raw system call: it returns at once on a free core and never blocks, so the goroutine keeps
// its processor).
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
