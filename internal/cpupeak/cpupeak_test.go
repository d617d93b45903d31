package cpupeak

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestKernelsRunEveryFMA: every kernel this CPU runs returns 12·n after n iterations, so each
// of its twelve accumulators took n FMAs (a kernel that skipped one, or ran an accumulator
// twice, returns another sum), and 0 for n = 0.
func TestKernelsRunEveryFMA(t *testing.T) {
	ks := kernels()
	if len(ks) == 0 {
		t.Skipf("no FMA kernel on %s", runtime.GOARCH)
	}
	for _, k := range ks {
		for _, n := range []int64{0, 1, 7, 1000, itersPerCall} {
			if got, want := k.run(n), float32(12*n); got != want {
				t.Errorf("%s: run(%d) = %g, want %g", k.name, n, got, want)
			}
		}
	}
}

// TestMeasure: a short measurement in one and two threads gives a positive rate with the
// widest kernel; two threads on two free cores are not slower than one by much (load can make
// them so: the bound is loose), and the string names kernel and threads.
func TestMeasure(t *testing.T) {
	r1, err := Measure(1, 20*time.Millisecond, 2)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("%v (%s)", err, runtime.GOARCH)
	}
	if err != nil {
		t.Fatal(err)
	}
	k, _ := bestKernel()
	if r1.Kernel != k.name || r1.Threads != 1 || !(r1.GFLOPS > 0) {
		t.Fatalf("Measure(1) = %+v, want kernel %q, 1 thread, > 0 GFLOP/s", r1, k.name)
	}
	r0, err := Measure(0, 0, 0) // clamped to 1 thread, 1 ms, 1 round
	if err != nil || r0.Threads != 1 || !(r0.GFLOPS > 0) {
		t.Fatalf("Measure(0, 0, 0) = %+v, %v; want 1 thread and a positive rate", r0, err)
	}
	if got := r1.String(); got == "" || r1.GFLOPS < 1 {
		t.Errorf("String() = %q for %+v", got, r1)
	}
	t.Logf("1 thread: %v", r1)
}

// TestRoundCountsFLOPs: a fake kernel whose calls take a known time gives the rate its FLOPs
// per call imply, within the timer's and scheduler's slack.
func TestRoundCountsFLOPs(t *testing.T) {
	const pause = 2 * time.Millisecond
	k := kernel{name: "fake", lanes: 1, run: func(n int64) float32 {
		time.Sleep(pause)
		return float32(12 * n)
	}}
	got, err := round(k, 1, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// at most one call per pause: the rate cannot exceed FLOPs per call / pause
	ceiling := float64(itersPerCall) * k.flopsPerIter() / pause.Seconds() / 1e9
	if !(got > 0 && got <= ceiling*1.01) {
		t.Errorf("round = %.3f GFLOP/s, want in (0, %.3f]", got, ceiling)
	}
}

// TestRoundReportsAWrongSum: a kernel that returns the wrong sum is an error naming it, not a
// rate.
func TestRoundReportsAWrongSum(t *testing.T) {
	k := kernel{name: "broken", lanes: 16, run: func(n int64) float32 { return float32(11 * n) }}
	if _, err := measureWith(k, 2, time.Millisecond, 1); err == nil {
		t.Fatal("measureWith(broken kernel) = nil error, want one")
	} else if want := "cpupeak: broken returned"; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("error %q, want it to start with %q", err, want)
	}
}
