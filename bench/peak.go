package bench

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/mhalab/mhalab/internal/cpupeak"
)

// The machine's float32 FMA peak (internal/cpupeak), measured at the start of every run on all
// its CPUs: the ceiling of any float32 matrix product here, so that a GFLOP/s figure — and a
// goal that asks for one — reads against what these cores can do at all. On a 2-core AMD EPYC
// of Zen 4 (AVX-512 on 256-bit units) it is ~230 GFLOP/s; on a Zen 5 or an Intel core with two
// 512-bit FMA units, twice as much per core at the same clock.

// measurePeak fills m's peak fields: the best of 3 rounds of 200 ms (--quick: 2 of 20 ms) on
// runtime.NumCPU() threads. Where no kernel exists the peak stays 0 and the note says why.
func measurePeak(m *machineInfo, quick bool) {
	d, rounds := 200*time.Millisecond, 3
	if quick {
		d, rounds = 20*time.Millisecond, 2
	}
	r, err := cpupeak.Measure(runtime.NumCPU(), d, rounds)
	switch {
	case errors.Is(err, cpupeak.ErrUnsupported):
		m.PeakNote = fmt.Sprintf("not measured: no FMA kernel for %s", runtime.GOARCH)
	case err != nil:
		m.PeakNote = "not measured: " + err.Error()
	default:
		m.PeakGFLOPS, m.PeakKernel, m.PeakThreads = r.GFLOPS, r.Kernel, r.Threads
	}
}

// peakLine is the report's line on the peak, or "" for reports without one.
func peakLine(m machineInfo) string {
	switch {
	case m.PeakGFLOPS > 0:
		return fmt.Sprintf("Float32 FMA peak of the cores: %.0f GFLOP/s (%s; %d threads at once, registers only), the ceiling of every GFLOP/s below.",
			m.PeakGFLOPS, m.PeakKernel, m.PeakThreads)
	case m.PeakNote != "":
		return "Float32 FMA peak of the cores: " + m.PeakNote + "."
	}
	return ""
}

// peakNeed is a goal row's addition for a goal that takes need GFLOP/s of useful work: the
// share of the machine's peak it asks for, or that it is above the peak (which no code meets),
// e.g. "; needs 211 GFLOP/s, 91% of the cores' FMA peak of 231". "" without a peak or a need.
func peakNeed(m machineInfo, need float64) string {
	if m.PeakGFLOPS <= 0 || need <= 0 {
		return ""
	}
	if need > m.PeakGFLOPS {
		return fmt.Sprintf("; needs %.0f GFLOP/s, above the cores' FMA peak of %.0f: out of reach on this machine", need, m.PeakGFLOPS)
	}
	return fmt.Sprintf("; needs %.0f GFLOP/s, %.0f%% of the cores' FMA peak of %.0f", need, 100*need/m.PeakGFLOPS, m.PeakGFLOPS)
}
