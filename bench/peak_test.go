package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestPeakNeed: a goal's need reads as a share of the peak, or as out of reach above it, and
// is left out without a peak or a need.
func TestPeakNeed(t *testing.T) {
	m := machineInfo{PeakGFLOPS: 231}
	for _, c := range []struct {
		m    machineInfo
		need float64
		want string
	}{
		{m, 211.4, "; needs 211 GFLOP/s, 92% of the cores' FMA peak of 231"},
		{m, 250, "; needs 250 GFLOP/s, above the cores' FMA peak of 231: out of reach on this machine"},
		{m, 0, ""},
		{machineInfo{}, 250, ""},
	} {
		if got := peakNeed(c.m, c.need); got != c.want {
			t.Errorf("peakNeed(%v, %v) = %q, want %q", c.m.PeakGFLOPS, c.need, got, c.want)
		}
	}
}

// TestPeakInGoals: with the peak measured, the GFLOP/s goal above it says it is out of reach,
// and a ratio goal says what rate it asks for (the same FLOPs in limit × PyTorch's time).
func TestPeakInGoals(t *testing.T) {
	rep := &benchReport{
		Machine: machineInfo{PeakGFLOPS: 231},
		MHA: []mhaResult{
			{mhaCase: mhaCase{Group: "seed003", B: 32, L: 128, E: 512, H: 8}, Backend: "xla:cpu", Impl: "mhalib plain", MedianMS: 63.4, GFLOPS: 152},
			{mhaCase: mhaCase{Group: "seed003", B: 32, L: 128, E: 512, H: 8}, Backend: "torch cpu", Impl: "PyTorch 2 nn.MHA", MedianMS: 57.2},
		},
	}
	compareWithTorch(rep)
	var got []string
	for _, g := range evaluateGoals(rep) {
		got = append(got, g.Goal+": "+g.Measured)
	}
	for _, want := range []string{
		// 152 GFLOP/s in 63.4 ms is 9.64 GFLOP; in 0.8 × 57.2 ms that is 211 GFLOP/s
		"xla:cpu seed003 ≤ 0.8× PyTorch (the faster of plain and flash; the fastest PyTorch measured): 1.11× (mhalib plain 63.4 ms vs PyTorch 2 57.2 ms; needs 211 GFLOP/s, 91% of the cores' FMA peak of 231)",
		"xla:cpu seed003 ≥ 250 GFLOP/s: 152 GFLOP/s (mhalib plain 63.4 ms; needs 250 GFLOP/s, above the cores' FMA peak of 231: out of reach on this machine)",
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("goals lack %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// TestPeakLine: the report names the peak, its kernel and threads; or why it was not measured;
// reports written before the peak existed print no line.
func TestPeakLine(t *testing.T) {
	var out bytes.Buffer
	printReport(&out, &benchReport{Machine: machineInfo{PeakGFLOPS: 230.6, PeakKernel: "AVX-512 FMA, 16 float32 lanes", PeakThreads: 2}})
	if want := "Float32 FMA peak of the cores: 231 GFLOP/s (AVX-512 FMA, 16 float32 lanes; 2 threads at once, registers only)"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
	if got := peakLine(machineInfo{PeakNote: "not measured: no FMA kernel for arm64"}); got != "Float32 FMA peak of the cores: not measured: no FMA kernel for arm64." {
		t.Errorf("peakLine without a kernel = %q", got)
	}
	if got := peakLine(machineInfo{}); got != "" {
		t.Errorf("peakLine of an older report = %q, want none", got)
	}
}

// TestMachineChangePeak: a peak more than 15% apart is another machine, even under the same
// model name; within 15% it is the measurement's spread.
func TestMachineChangePeak(t *testing.T) {
	report := func(peak float64) *benchReport {
		return &benchReport{Machine: machineInfo{CPUs: 2, CPUModel: "AMD EPYC", PeakGFLOPS: peak}}
	}
	var out bytes.Buffer
	printMachineChange(&out, report(460), report(231))
	if want := "float32 FMA peak then 460 GFLOP/s, now 231"; !strings.Contains(out.String(), want) {
		t.Errorf("warning lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	printMachineChange(&out, report(231), report(220))
	printMachineChange(&out, report(0), report(231))
	if out.Len() != 0 {
		t.Errorf("peaks within 15%% or unknown: want no warning, got %q", out.String())
	}
}

// TestFinishPeak: the end of a run measures the peak again (two measurements, the larger
// kept) and gives each product its share; a rate above the peak sets the peak aside, with a
// note naming the rate, so that no goal row reads a share of it or calls a goal out of reach.
func TestFinishPeak(t *testing.T) {
	rep := &benchReport{Products: []productResult{{Group: "long", Product: "scores q·kᵀ", Backend: "go", GFLOPS: 1}}}
	measurePeak(&rep.Machine, true)
	if rep.Machine.PeakGFLOPS == 0 {
		t.Skipf("peak not measured here: %s", rep.Machine.PeakNote)
	}
	finishPeak(rep, true)
	m := rep.Machine
	if len(m.PeakRuns) != 2 || m.PeakGFLOPS != max(m.PeakRuns[0], m.PeakRuns[1]) || m.PeakNote != "" {
		t.Fatalf("after finishPeak: peak %v of runs %v, note %q; want the larger of two runs, no note", m.PeakGFLOPS, m.PeakRuns, m.PeakNote)
	}
	if got, want := rep.Products[0].PeakPercent, 100/m.PeakGFLOPS; got != want {
		t.Errorf("product's share %v%%, want %v%%", got, want)
	}
	if line := peakLine(m); !strings.Contains(line, "the larger of ") {
		t.Errorf("peak line does not name both measurements: %q", line)
	}

	busy := &benchReport{
		MHA: []mhaResult{{mhaCase: mhaCase{Group: "seed003", B: 32, L: 128, E: 512, H: 8}, Backend: "xla:cpu", Impl: "mhalib plain", MedianMS: 1, GFLOPS: 1e6}},
	}
	measurePeak(&busy.Machine, true)
	finishPeak(busy, true)
	if busy.Machine.PeakGFLOPS != 0 || len(busy.Machine.PeakRuns) != 2 ||
		!strings.HasPrefix(busy.Machine.PeakNote, "set aside: measured ") || !strings.Contains(busy.Machine.PeakNote, "below the 1000000 GFLOP/s of mhalib plain on xla:cpu (seed003)") {
		t.Fatalf("a rate above the peak: peak %v, runs %v, note %q; want the peak set aside with a note", busy.Machine.PeakGFLOPS, busy.Machine.PeakRuns, busy.Machine.PeakNote)
	}
	for _, g := range evaluateGoals(busy) {
		if strings.Contains(g.Measured, "peak") {
			t.Errorf("goal row reads a peak set aside: %s: %s", g.Goal, g.Measured)
		}
	}
	if line := peakLine(busy.Machine); !strings.Contains(line, "set aside") {
		t.Errorf("peak line %q does not say the peak was set aside", line)
	}
}
