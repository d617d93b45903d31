//go:build unix

package fastgo_test

import (
	"syscall"
	"testing"
)

// cpuMS is the CPU time this process has used so far (all threads), in milliseconds.
func cpuMS() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// reportCPU adds the CPU time per iteration since start (ms) to a benchmark's metrics: on a
// machine shared with other work it moves much less than the elapsed time.
func reportCPU(b *testing.B, start float64) {
	b.ReportMetric((cpuMS()-start)/float64(b.N), "cpu-ms/op")
}
