//go:build !unix

package bench

// processCPUMS returns 0: the process's CPU time is not read on this system.
func processCPUMS() float64 { return 0 }
