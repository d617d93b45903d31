//go:build !linux

package fastgo

import "runtime"

// osYield lets other goroutines run (sched_yield on Linux, yield_linux.go).
func osYield() { runtime.Gosched() }
