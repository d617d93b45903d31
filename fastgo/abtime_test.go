package fastgo

import (
	"runtime"
	"slices"
	"testing"
)

// abVariant is one side of an interleaved A/B timing: fn does flops floating-point operations.
type abVariant struct {
	name  string
	flops float64
	fn    func()
}

// abTime runs the variants in turn, rounds times, each for about minNS of this thread's CPU time
// per round, and reports each variant's median GFLOP per CPU-second of the thread as a metric
// "<name>-GFLOP/cpu-s". On a machine shared with other work, the medians of interleaved rounds
// move much less than separate runs (whose load differs). Skips where the thread's CPU time
// cannot be read.
func abTime(b *testing.B, rounds int, minNS int64, vs ...abVariant) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if threadCPUNS() < 0 {
		b.Skip("no per-thread CPU time on this OS")
	}
	// calls per round: enough for minNS on the first variant's first run
	reps := make([]int, len(vs))
	for i, v := range vs {
		n := 1
		for {
			t0 := threadCPUNS()
			for range n {
				v.fn()
			}
			if threadCPUNS()-t0 >= minNS/4 || n > 1<<24 {
				reps[i] = n * 4
				break
			}
			n *= 2
		}
	}
	rates := make([][]float64, len(vs))
	for b.Loop() {
		for range rounds {
			for i, v := range vs {
				t0 := threadCPUNS()
				for range reps[i] {
					v.fn()
				}
				dt := threadCPUNS() - t0
				rates[i] = append(rates[i], v.flops*float64(reps[i])/float64(max(dt, 1)))
			}
		}
	}
	for i, v := range vs {
		slices.Sort(rates[i])
		b.ReportMetric(rates[i][len(rates[i])/2], v.name+"-GFLOP/cpu-s")
	}
}
