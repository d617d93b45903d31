package fastgo

import (
	"fmt"
	"os"
	"strconv"
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
	if knob, values, ok := benchKnobOf(b); ok {
		prev := knob.get()
		b.Cleanup(func() { knob.set(prev) })
		knob.set(values[0])
		names := make([]string, len(values))
		for k, v := range values {
			names[k] = fmt.Sprintf("%s=%d", knob.name, v)
		}
		abLoop(b, names, func(k int) { knob.set(values[k]) }, body)
		return
	}
	modes := benchModes(b)
	if len(modes) > 0 {
		withVecMode(b, modes[0])
	}
	names := make([]string, len(modes))
	for k, m := range modes {
		names[k] = m.name
	}
	abLoop(b, names, func(k int) { setVec(modes[k].avx512, modes[k].avx2) }, body)
}

// benchKnobEnv names a tuning knob (a package variable, benchKnobs) and values that vecLoop
// alternates, as it alternates vector modes with benchVecEnv (which it then ignores):
//
//	MHALAB_FASTGO_AB=groupmin=1048576,65536   groupMinWork 1048576, then 65536, …
//	MHALAB_FASTGO_AB=before=1,0               the decoding switches as before 2026-12-02's AVX2 work, then as now
//
// Knobs: groupmin (groupMinWork), groupprefetch, axpywalk, dot4long, pairs, colsfirst,
// expdotinplace (0/1 switches), pairtile, before.
const benchKnobEnv = "MHALAB_FASTGO_AB"

// benchKnob is one tuning knob of benchKnobEnv.
type benchKnob struct {
	name string
	get  func() int
	set  func(int)
}

// benchKnobs are the knobs benchKnobEnv can name.
var benchKnobs = []benchKnob{
	{"groupmin", func() int { return groupMinWork }, func(v int) { groupMinWork = v }},
	{"groupprefetch", func() int { return b2i(groupPrefetch) }, func(v int) { groupPrefetch = v != 0 }},
	{"axpywalk", func() int { return b2i(axpyWalk) }, func(v int) { axpyWalk = v != 0 }},
	{"before", func() int { return b2i(groupMinWork == 1<<20) }, func(v int) { // this session's switches at once
		groupMinWork, dot4LongRows, groupPrefetch, axpyWalk = 1<<17, true, true, true
		if v != 0 {
			groupMinWork, dot4LongRows, groupPrefetch, axpyWalk = 1<<20, false, false, false
		}
	}},
	{"dot4long", func() int { return b2i(dot4LongRows) }, func(v int) { dot4LongRows = v != 0 }},
	{"pairs", func() int { return b2i(pairExamples) }, func(v int) { pairExamples = v != 0 }},
	{"pairtile", func() int { return pairTile }, func(v int) { pairTile = v }},
	{"colsfirst", func() int { return b2i(columnsFirst) }, func(v int) { columnsFirst = v != 0 }},
	{"expdotinplace", func() int { return b2i(expDotInPlace) }, func(v int) { expDotInPlace = v != 0 }},
}

// benchKnobOf returns the knob and values benchKnobEnv names (false: unset).
func benchKnobOf(b *testing.B) (benchKnob, []int, bool) {
	env := os.Getenv(benchKnobEnv)
	if env == "" {
		return benchKnob{}, nil, false
	}
	name, list, _ := strings.Cut(env, "=")
	for _, k := range benchKnobs {
		if k.name != name {
			continue
		}
		var values []int
		for _, f := range strings.Split(list, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("%s=%s: %v", benchKnobEnv, env, err)
			}
			values = append(values, v)
		}
		return k, values, true
	}
	b.Fatalf("%s=%s: no knob %q", benchKnobEnv, env, name)
	return benchKnob{}, nil, false
}

// abLoop runs body(i) as the benchmark loop; with two or more variants it alternates them in
// blocks of vecBlock operations (set(k) switches to variant k; the first is set by the caller)
// and reports, per variant, the elapsed and the process CPU time per operation ("µs/op-NAME",
// "cpu-µs/op-NAME") and their ratios to the first variant's ("NAME/FIRST", "cpu-NAME/FIRST").
// A change of the machine's load then hits every variant alike.
func abLoop(b *testing.B, names []string, set func(k int), body func(i int)) {
	if len(names) < 2 {
		for i := 0; b.Loop(); i++ {
			body(i)
		}
		return
	}
	wall := make([]time.Duration, len(names))
	cpu := make([]float64, len(names))
	ops := make([]int, len(names))
	m := 0
	start, startCPU := time.Now(), processCPU()
	end := func() { // of a block of variant m
		wall[m] += time.Since(start)
		cpu[m] += processCPU() - startCPU
	}
	i := 0
	for ; b.Loop(); i++ {
		body(i)
		ops[m]++
		if (i+1)%vecBlock == 0 {
			end()
			m = (m + 1) % len(names)
			set(m)
			start, startCPU = time.Now(), processCPU()
		}
	}
	if i%vecBlock != 0 {
		end()
	}
	if ops[len(names)-1] == 0 {
		return // calibration rounds (b.N < one block per variant): nothing to compare
	}
	us := func(k int) float64 { return wall[k].Seconds() * 1e6 / float64(ops[k]) }
	cpuUS := func(k int) float64 { return cpu[k] * 1e6 / float64(ops[k]) }
	for k, name := range names {
		b.ReportMetric(us(k), "µs/op-"+name)
		b.ReportMetric(cpuUS(k), "cpu-µs/op-"+name)
		if k > 0 {
			b.ReportMetric(us(k)/us(0), fmt.Sprintf("%s/%s", name, names[0]))
			if cpuUS(0) > 0 {
				b.ReportMetric(cpuUS(k)/cpuUS(0), fmt.Sprintf("cpu-%s/%s", name, names[0]))
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
