// Package cpupeak measures the most float32 arithmetic this machine's cores can do: the
// throughput of the widest fused multiply–add (FMA) vector instruction the CPU has, on
// independent accumulators, in as many threads as asked. It is the ceiling of any float32
// matrix product here — the number against which "GFLOP/s" in a benchmark reads as a fraction.
//
// Each thread runs an assembly loop of 12 independent FMAs per iteration (enough to cover the
// FMA latency of current x86 cores: 4 cycles at up to 2 FMAs per cycle), nothing else but the
// loop's counter, on registers only: no memory traffic, so the result is the FMA units' rate at
// the clock the cores hold with that many threads busy. Vector widths: AVX-512 (16 float32
// lanes) where the CPU and OS have it, else AVX2 with FMA (8 lanes). On a CPU whose AVX-512
// runs on 256-bit units (AMD Zen 4) the AVX-512 rate equals the AVX2 one; on others it is
// twice. Other architectures are not measured (Measure returns ErrUnsupported).
//
// What it is not: a bound that depends on memory (a matrix–vector product or an element-wise
// pass is limited by bandwidth, far below this), nor the rate of a whole program. A busy
// machine measures lower: run it with nothing else on the cores.
package cpupeak

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// ErrUnsupported is returned by Measure where no FMA kernel exists for the CPU.
var ErrUnsupported = errors.New("cpupeak: no float32 FMA kernel for this CPU")

// Result is one measurement.
type Result struct {
	Kernel  string  // the instructions timed, e.g. "AVX-512 FMA, 16 float32 lanes"
	Threads int     // threads run at once, each locked to an OS thread
	GFLOPS  float64 // float32 FLOP/s of all threads together, in billions (an FMA counts 2)
}

// String is e.g. "225 GFLOP/s (AVX-512 FMA, 16 float32 lanes; 2 threads)".
func (r Result) String() string {
	return fmt.Sprintf("%.0f GFLOP/s (%s; %d %s)", r.GFLOPS, r.Kernel, r.Threads, plural(r.Threads, "thread", "threads"))
}

// kernel is one FMA loop: run(n) performs n iterations of 12 vector FMAs of lanes float32 lanes
// each, acc += 1·1 on every accumulator from 0, and returns the sum of the accumulators' first
// lanes, 12·n (exact while 12·n ≤ 2²⁴): a check that every FMA ran.
type kernel struct {
	name  string
	lanes int
	run   func(n int64) float32
}

// flopsPerIter is the float32 FLOPs of one iteration of k.
func (k kernel) flopsPerIter() float64 { return float64(12 * k.lanes * 2) }

// itersPerCall keeps every accumulator exact (12·n fits a float32's 24-bit significand as a sum
// of 12 exact integers ≤ n) and each call short (about a millisecond on a current core).
const itersPerCall = 1 << 18

// Measure runs the widest FMA kernel of this CPU in threads threads at once (1 if fewer),
// each for about d, rounds times, and returns the best round. d below a millisecond is taken
// as a millisecond.
func Measure(threads int, d time.Duration, rounds int) (Result, error) {
	k, ok := bestKernel()
	if !ok {
		return Result{}, ErrUnsupported
	}
	return measureWith(k, max(threads, 1), max(d, time.Millisecond), max(rounds, 1))
}

// measureWith is Measure with the kernel given.
func measureWith(k kernel, threads int, d time.Duration, rounds int) (Result, error) {
	best := 0.0
	for range rounds {
		gflops, err := round(k, threads, d)
		if err != nil {
			return Result{}, err
		}
		best = max(best, gflops)
	}
	return Result{Kernel: k.name, Threads: threads, GFLOPS: best}, nil
}

// round runs k in threads threads, all started together, each calling it until d has passed
// since the start, and returns the FLOPs of all calls over the time until the last thread ended.
func round(k kernel, threads int, d time.Duration) (float64, error) {
	var wg sync.WaitGroup
	calls := make([]int64, threads)
	bad := make([]float32, threads)
	start := make(chan struct{})
	var began time.Time
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			<-start
			end := began.Add(d)
			for {
				if got := k.run(itersPerCall); got != 12*itersPerCall {
					bad[t] = got
					return
				}
				calls[t]++
				if !time.Now().Before(end) {
					return
				}
			}
		}()
	}
	began = time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)
	total := int64(0)
	for t := range threads {
		if bad[t] != 0 {
			return 0, fmt.Errorf("cpupeak: %s returned %g after %d iterations, want %d", k.name, bad[t], itersPerCall, 12*itersPerCall)
		}
		total += calls[t]
	}
	return float64(total) * itersPerCall * k.flopsPerIter() / elapsed.Seconds() / 1e9, nil
}

// plural returns one for n = 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
