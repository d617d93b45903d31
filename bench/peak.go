package bench

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/mhalab/mhalab/internal/cpupeak"
)

// The machine's float32 FMA peak (internal/cpupeak), measured at the start and at the end of
// every run on all its CPUs: the ceiling of any float32 matrix product here, so that a GFLOP/s
// figure — and a goal that asks for one — reads against what these cores can do at all. On a
// 2-core AMD EPYC of Zen 4 (AVX-512 on 256-bit units) it is ~230 GFLOP/s; on a Zen 5 or an
// Intel core with two 512-bit FMA units, twice as much per core at the same clock.

// measurePeak measures the peak once more into m: the best of 3 rounds of 200 ms (--quick: 2
// of 20 ms) on runtime.NumCPU() threads, appended to m.PeakRuns, and m.PeakGFLOPS the largest
// of them. Run measures at the start and again at the end (finishPeak): a host that ran other
// work on these cores during one of them halves that measurement (seen once on a 2-core VM:
// 117 GFLOP/s at a run's start, 215–231 in five runs after it). Where no kernel exists the
// peak stays 0 and the note says why.
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
		m.PeakRuns = append(m.PeakRuns, r.GFLOPS)
		m.PeakGFLOPS, m.PeakKernel, m.PeakThreads = max(m.PeakGFLOPS, r.GFLOPS), r.Kernel, r.Threads
	}
}

// finishPeak ends a run's use of the peak: it measures it again (measurePeak), then checks it
// against every rate the run measured — mhalib's and PyTorch's passes, the products, the
// sliding-window rows. A rate above the peak means both measurements were made on busy cores:
// the note says so and the peak is set aside (PeakGFLOPS 0, the measurements kept in
// PeakRuns), so that no row reads a share of it or calls a goal out of reach. Otherwise each
// product gets its share of the peak.
func finishPeak(rep *benchReport, quick bool) {
	m := &rep.Machine
	measurePeak(m, quick)
	if m.PeakGFLOPS <= 0 {
		return
	}
	fastest, what := 0.0, ""
	note := func(gflops float64, name string) {
		if gflops > fastest {
			fastest, what = gflops, name
		}
	}
	for _, r := range rep.MHA {
		note(r.GFLOPS, fmt.Sprintf("%s on %s (%s)", r.Impl, r.Backend, r.key()))
	}
	for _, r := range rep.Products {
		note(r.GFLOPS, fmt.Sprintf("the %s on %s (%s)", r.Product, r.Backend, r.Group))
	}
	if rep.Modern != nil {
		for _, r := range rep.Modern.Window {
			note(r.GFLOPS, fmt.Sprintf("%s on %s (%s, L %d)", r.Impl, r.Backend, r.Mask, r.L))
		}
	}
	if fastest > 1.02*m.PeakGFLOPS { // 2%: the peak's own rounding and clock steps
		m.PeakNote = fmt.Sprintf("set aside: measured %s GFLOP/s at the start and end of the run, below the %.0f GFLOP/s of %s — the cores were busy during the measurements",
			joinRates(m.PeakRuns), fastest, what)
		m.PeakGFLOPS = 0
		return
	}
	for i := range rep.Products {
		rep.Products[i].PeakPercent = 100 * rep.Products[i].GFLOPS / m.PeakGFLOPS
	}
}

// joinRates is e.g. "117 and 226".
func joinRates(rates []float64) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = fmt.Sprintf("%.0f", r)
	}
	return strings.Join(parts, " and ")
}

// peakLine is the report's line on the peak, or "" for reports without one.
func peakLine(m machineInfo) string {
	switch {
	case m.PeakGFLOPS > 0:
		runs := ""
		if len(m.PeakRuns) > 1 {
			runs = fmt.Sprintf(", the larger of %s measured at the start and end of the run", joinRates(m.PeakRuns))
		}
		return fmt.Sprintf("Float32 FMA peak of the cores: %.0f GFLOP/s (%s; %d threads at once, registers only%s), the ceiling of every GFLOP/s below.",
			m.PeakGFLOPS, m.PeakKernel, m.PeakThreads, runs)
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
