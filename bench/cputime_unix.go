//go:build unix

package bench

import "syscall"

// processCPUMS returns the CPU time (user + system) this process has used so far, in
// milliseconds, counting every thread (XLA's and the Go runtime's); 0 where unknown.
func processCPUMS() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}
