//go:build unix

package fastgo

import "syscall"

// processCPU is the CPU time this process has used so far (all threads), in seconds (0 where it
// cannot be read).
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
