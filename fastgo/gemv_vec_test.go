package fastgo

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Vector modes for tests and benchmarks: the kernels of gemv, dotRows and groupRows (and the
// other loops gated by vecAVX512 / vecAVX2) run as on a CPU with AVX-512, with AVX2+FMA only,
// or with neither (plain Go). A test runs the AVX2 kernels on an AVX-512 CPU by clearing
// vecAVX512; a benchmark compares the modes in one process (vecLoop).

// vecMode is one setting of the vector flags.
type vecMode struct {
	name         string
	avx512, avx2 bool
}

// vecModes returns the modes this CPU runs, best first: "avx512", "avx2" (each where the CPU has
// it) and "go".
func vecModes() []vecMode {
	var modes []vecMode
	if cpuAVX512 {
		modes = append(modes, vecMode{"avx512", true, cpuAVX2})
	}
	if cpuAVX2 {
		modes = append(modes, vecMode{"avx2", false, true})
	}
	return append(modes, vecMode{name: "go"})
}

// withVecMode runs the rest of tb in mode m (restored by tb.Cleanup). Tests that change the
// mode must not run in parallel with others.
func withVecMode(tb testing.TB, m vecMode) {
	tb.Helper()
	p512, p2 := setVec(m.avx512, m.avx2)
	tb.Cleanup(func() { setVec(p512, p2) })
}

// vecModeNamed returns the mode called name, false where this CPU lacks it.
func vecModeNamed(name string) (vecMode, bool) {
	for _, m := range vecModes() {
		if m.name == name {
			return m, true
		}
	}
	return vecMode{}, false
}

// benchVecEnv names the modes a benchmark loop (vecLoop) alternates:
//
//	MHALAB_FASTGO_VEC=avx2,go   alternate these modes (blocks of vecBlock operations)
//	MHALAB_FASTGO_VEC=ab        alternate every mode this CPU runs
//	MHALAB_FASTGO_VEC=go        plain Go only (one name: that mode only)
//
// Unset: the CPU's best mode, as the package runs.
const benchVecEnv = "MHALAB_FASTGO_VEC"

// vecBlock is the operations of one mode before the next mode runs: the decoding benchmarks
// cycle through 16 cache chunks, so that each chunk comes back to a mode as cold as it was.
const vecBlock = 16

// benchModes returns the modes benchVecEnv names (nil: unset).
func benchModes(b *testing.B) []vecMode {
	env := os.Getenv(benchVecEnv)
	if env == "" {
		return nil
	}
	if env == "ab" {
		return vecModes()
	}
	var modes []vecMode
	for _, name := range strings.Split(env, ",") {
		m, ok := vecModeNamed(strings.TrimSpace(name))
		if !ok {
			b.Skipf("%s=%s: this CPU (or build) does not run %q", benchVecEnv, env, name)
		}
		modes = append(modes, m)
	}
	return modes
}

// vecLoop runs body(i), i = 0, 1, …, as the benchmark loop (b.Loop). With several modes in
// benchVecEnv it alternates them in blocks of vecBlock operations and reports, per mode, the
// elapsed and the process CPU time per operation ("µs/op-avx2", "cpu-µs/op-avx2", …; CPU time
// moves less on a machine shared with other work) and each mode's elapsed and CPU time over
// the first mode's ("go/avx2", "cpu-go/avx2": > 1 where the first is faster).
func vecLoop(b *testing.B, body func(i int)) {
	modes := benchModes(b)
	if len(modes) > 0 {
		withVecMode(b, modes[0])
	}
	if len(modes) < 2 {
		for i := 0; b.Loop(); i++ {
			body(i)
		}
		return
	}
	wall := make([]time.Duration, len(modes))
	cpu := make([]float64, len(modes))
	ops := make([]int, len(modes))
	m := 0
	start, startCPU := time.Now(), processCPU()
	end := func() { // of a block of mode m
		wall[m] += time.Since(start)
		cpu[m] += processCPU() - startCPU
	}
	i := 0
	for ; b.Loop(); i++ {
		body(i)
		ops[m]++
		if (i+1)%vecBlock == 0 {
			end()
			m = (m + 1) % len(modes)
			setVec(modes[m].avx512, modes[m].avx2)
			start, startCPU = time.Now(), processCPU()
		}
	}
	if i%vecBlock != 0 {
		end()
	}
	if ops[len(modes)-1] == 0 {
		return // calibration rounds (b.N < one block per mode): nothing to compare
	}
	us := func(k int) float64 { return wall[k].Seconds() * 1e6 / float64(ops[k]) }
	cpuUS := func(k int) float64 { return cpu[k] * 1e6 / float64(ops[k]) }
	for k, mode := range modes {
		b.ReportMetric(us(k), "µs/op-"+mode.name)
		b.ReportMetric(cpuUS(k), "cpu-µs/op-"+mode.name)
		if k > 0 {
			b.ReportMetric(us(k)/us(0), fmt.Sprintf("%s/%s", mode.name, modes[0].name))
			if cpuUS(0) > 0 {
				b.ReportMetric(cpuUS(k)/cpuUS(0), fmt.Sprintf("cpu-%s/%s", mode.name, modes[0].name))
			}
		}
	}
}
