package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/testenv"
)

func TestMain(m *testing.M) { backendtest.Main(m, "bench") }

// TestBenchQuick runs a --quick bench in-process on every test backend (the memory suites
// start child processes: they are covered by TestBenchMemChild here, by
// TestBenchMemoryChildProcess in cmd/mhalab and by scripts/test.sh, which runs the binary).
func TestBenchQuick(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "bench.json")
	var stdout, stderr bytes.Buffer
	cfg := Config{Quick: true, Suites: []string{"mha", "decode"}, Backends: SplitList(testBackendList(t)), JSONPath: jsonPath}
	if err := Run(context.Background(), &stdout, &stderr, cfg); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"## Forward pass, self-attention MultiHeadAttention(x, x, x), float32",
		"| seed003 | B4 L32 E64 h4 | no | mhalib plain (Auto) | go |",
		"| long | B1 L512 E64 h4 | yes | mhalib flash (Auto) | go |",
		"## Greedy decoding: KV cache vs recompute",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep benchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if !rep.Quick || len(rep.MHA) == 0 || len(rep.Decode) == 0 {
		t.Fatalf("JSON report incomplete: quick=%v, %d MHA results, %d decoding results", rep.Quick, len(rep.MHA), len(rep.Decode))
	}
	for _, r := range rep.MHA {
		if r.Error != "" || r.MedianMS <= 0 || len(r.TimesMS) < 3 || r.GFLOPS <= 0 || (runtime.GOOS == "linux" && r.CPUMS <= 0) {
			t.Errorf("bad MHA result %+v", r)
		}
	}
	for _, d := range rep.Decode {
		if d.Error != "" || d.CachedTokensPerS <= 0 || d.RecomputeTokPerS <= 0 || d.MaxLogitDiff > 1e-4 {
			t.Errorf("bad decoding result %+v", d)
		}
	}
}

// testBackendList is the backends the tests run on, for --backends.
func testBackendList(t *testing.T) string {
	if v := os.Getenv("MHALAB_TEST_BACKENDS"); v != "" {
		return v
	}
	// go and xla:cpu where its plugin loads; a missing plugin fails under CI (backendtest.Run's
	// rule) and is left out elsewhere, as for another user who has not run the setup.
	avail, missing := backendtest.Available()
	for name, err := range missing {
		if testenv.InCI() {
			t.Fatalf("CI=%s requires backend %s: %v", os.Getenv("CI"), name, err)
		}
		t.Logf("backend %s unavailable, left out: %v", name, err)
	}
	return strings.Join(avail, ",")
}

// TestBenchMemChild runs the child side of the memory measurements in-process.
func TestBenchMemChild(t *testing.T) {
	for _, spec := range []string{
		`{"backend":"go","kind":"flash","b":1,"l":256,"h":2,"d":8}`,
		`{"backend":"go","kind":"ckpt","b":1,"l":16,"h":2,"d":8,"n":2}`,
		`{"backend":"go","kind":"grad-flash","b":1,"l":64,"h":2,"d":8,"n":1}`,
	} {
		var stdout bytes.Buffer
		if err := RunChild(spec, &stdout); err != nil {
			t.Fatal(err)
		}
		var res memResult
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("%s: %v: %s", spec, err, stdout.String())
		}
		if res.Error != "" || res.PeakRSSKiB <= 0 || res.BaseRSSKiB <= 0 || res.RunMS <= 0 {
			t.Errorf("%s: %+v", spec, res)
		}
	}
}

// TestBenchPlainRefused checks that plain attention too large for the limit is a clear error in
// the memory table, not a crash.
func TestBenchPlainRefused(t *testing.T) {
	var stdout bytes.Buffer
	// 3 × [1, 8, 65536, 65536] float32 = 384 GiB: more than any machine the tests run on.
	if err := RunChild(`{"backend":"go","kind":"plain","b":1,"l":65536,"h":8,"d":8}`, &stdout); err != nil {
		t.Fatal(err)
	}
	var res memResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Error, "mhalib: attention scores too large: plain attention would hold 3 copies of the scores (Float32)[1 8 65536 65536] = 384 GiB") {
		t.Fatalf("error %q", res.Error)
	}
}

func TestBenchGoals(t *testing.T) {
	rep := &benchReport{
		MHA: []mhaResult{
			{mhaCase: mhaCase{Group: "long", B: 1, L: 4096, E: 512, H: 8}, Backend: "xla:cpu", Impl: "mhalib plain", MedianMS: 500},
			{mhaCase: mhaCase{Group: "long", B: 1, L: 4096, E: 512, H: 8, Flash: true}, Backend: "xla:cpu", Impl: "mhalib flash", MedianMS: 300, AutoChoice: true},
			{mhaCase: mhaCase{Group: "long", B: 1, L: 4096, E: 512, H: 8}, Backend: "torch cpu", Impl: "PyTorch 2 nn.MHA", MedianMS: 400},
			// A case with PyTorch timed before (180 ms) and after (220 ms) it: the ratio uses the mean, 200 ms.
			{mhaCase: mhaCase{Group: "long", B: 1, L: 4096, E: 512, H: 8, Causal: true}, Backend: "xla:cpu", Impl: "mhalib plain", MedianMS: 200,
				Torch: []torchPair{{Impl: "PyTorch 2 nn.MHA", BeforeMS: 180, AfterMS: 220}}},
			{mhaCase: mhaCase{Group: "long", B: 1, L: 4096, E: 512, H: 8, Causal: true}, Backend: "torch cpu", Impl: "PyTorch 2 nn.MHA", MedianMS: 150},
			// seed003 without PyTorch: only its GFLOP/s goal.
			{mhaCase: mhaCase{Group: "seed003", B: 32, L: 128, E: 512, H: 8}, Backend: "xla:cpu", Impl: "mhalib plain", MedianMS: 37, GFLOPS: 260},
			// The pure-Go backend on long: 1.05× PyTorch misses issue 29's ≤ 1.0×.
			{mhaCase: mhaCase{Group: "long", B: 1, L: 4096, E: 512, H: 8, Flash: true}, Backend: "go", Impl: "mhalib flash", MedianMS: 420, AutoChoice: true},
		},
		Decode: []decodeResult{{Backend: "go", Context: 2048, CachedTokensPerS: 100, RecomputeTokPerS: 20, Speedup: 5}},
		Memory: []memResult{{memConfig: memConfig{Backend: "xla:cpu", Kind: "flash", L: 32768}, PeakRSSKiB: 1 << 20}},
	}
	compareWithTorch(rep)
	var lines []string
	for _, g := range evaluateGoals(rep) {
		lines = append(lines, g.Goal+": "+g.Measured+" "+map[bool]string{true: "met", false: "missed"}[g.Met])
	}
	got := strings.Join(lines, "\n")
	want := strings.Join([]string{
		"xla:cpu long ≤ 0.8× PyTorch (the faster of plain and flash; the fastest PyTorch measured): 0.75× (mhalib flash 300 ms vs PyTorch 2 400 ms) met",
		"xla:cpu long/causal ≤ 0.8× PyTorch (the faster of plain and flash; the fastest PyTorch measured): 1.00× (mhalib plain 200 ms vs PyTorch 2 200 ms) missed",
		"go long ≤ 1.0× PyTorch (the faster of plain and flash; the fastest PyTorch measured): 1.05× (mhalib flash 420 ms vs PyTorch 2 400 ms) missed",
		"xla:cpu seed003 ≥ 250 GFLOP/s: 260 GFLOP/s (mhalib plain 37.0 ms) met",
		"xla:cpu long: flash ≤ 1.5× plain: 0.60× (300 ms vs 500 ms) met",
		"xla:cpu long: Auto (the default) chooses the faster of plain and flash: flash 300 ms vs plain 500 ms met",
		"xla:cpu flash forward at L = 32768, B1 h8 dk64 within 2 GiB peak RSS: 1.0 GiB met",
		"go decoding with KV cache ≥ 10× recompute (L 2048, D 512, h 8): 5× (100.0 vs 20.00 tokens/s) missed",
	}, "\n")
	if got != want {
		t.Fatalf("goals:\n%s\nwant:\n%s", got, want)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Suites: []string{"nope"}}, `bench: unknown suite "nope" (valid: mha, torch, products, decode, minilm, smollm2, explore, modern, memory, checkpoint, devices)`},
		{Config{Suites: []string{"mha"}, Backends: []string{"tpu"}}, `unknown backend "tpu"`},
		{Config{Suites: []string{"mha"}, Groups: []string{"gpt"}}, `bench: unknown case group "gpt" (valid: seed003, long, llm)`},
		{Config{Suites: []string{"mha"}, TorchDevice: "mps"}, `PyTorch device "mps": want cpu or cuda`},
		{Config{Suites: []string{"mha"}, Threads: -1}, "-1 PyTorch threads"},
		{Config{Suites: []string{"mha"}, Budget: -time.Second}, "budget -1s"},
		{Config{Suites: []string{"memory"}}, "need Config.ChildCommand"},
	} {
		err := Run(context.Background(), io.Discard, io.Discard, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run(%+v): err = %v, want one containing %q", c.cfg, err, c.want)
		}
	}
}

func TestMedianAndFormat(t *testing.T) {
	d := []time.Duration{10, 2, 1, 3}
	if m := Median(d); m != 2 {
		t.Errorf("Median(10,2,1,3 ns) = %v, want 2 (integer mean of 2 and 3)", m)
	}
	if d[0] != 10 {
		t.Errorf("Median sorted its argument: %v", d)
	}
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("Median(3,1,2) = %v, want 2", m)
	}
	if m := Median([]float64{}); m != 0 {
		t.Errorf("Median() = %v, want 0", m)
	}
	for d, want := range map[time.Duration]string{
		8210 * time.Microsecond: "8.21 ms", 118 * time.Millisecond: "118 ms", 2410 * time.Millisecond: "2.41 s", 15 * time.Millisecond: "15.0 ms",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestRunStopsWhenCancelled: a cancelled context (Ctrl-C) measures nothing more, prints and
// writes nothing, and returns the context's error.
func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout bytes.Buffer
	path := filepath.Join(t.TempDir(), "bench.json")
	err := Run(ctx, &stdout, io.Discard, Config{Quick: true, Suites: []string{"mha", "decode"}, Backends: []string{"go"}, JSONPath: path})
	if !errors.Is(err, context.Canceled) || stdout.Len() != 0 {
		t.Errorf("cancelled: error %v, stdout %q; want context.Canceled and nothing", err, stdout.String())
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("cancelled run wrote %s", path)
	}
}

// TestMemMeasurementStopsWithItsContext: Ctrl-C (the context) kills a memory measurement's
// child process at once, not after its time limit.
func TestMemMeasurementStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := runMemMeasurement(ctx, memConfig{Backend: "go", Kind: "flash", B: 1, L: 8, H: 1, D: 8}, time.Minute, []string{"sh", "-c", "sleep 60", "sh"})
	if time.Since(start) > 30*time.Second || !strings.HasPrefix(r.Error, "stopped: ") {
		t.Errorf("after %s: error %q, want it stopped at once", time.Since(start).Round(time.Millisecond), r.Error)
	}
}

// TestBlockGradGoals: goal 5's rows from block gradient measurements — the backward ratio where
// plain fits, and at the longest length flash fitting where plain is refused.
func TestBlockGradGoals(t *testing.T) {
	row := func(kind string, l int, step, fwd, stepCPU, fwdCPU float64, err string) memResult {
		return memResult{memConfig: memConfig{Backend: "go", Kind: kind, B: 1, L: l, H: 8, D: 512, N: 1},
			RunMS: step, ForwardMS: fwd, StepCPUMS: stepCPU, ForwardCPUMS: fwdCPU, PeakRSSKiB: 1 << 20, Error: err}
	}
	rows := []memResult{
		row("grad-plain", 1024, 300, 100, 500, 200, ""),
		row("grad-flash", 1024, 250, 50, 560, 200, ""), // CPU backward 360 vs 300: 1.2×
		row("grad-plain", 16384, 0, 0, 0, 0, "mhalib: attention scores too large: …"),
		row("grad-flash", 16384, 9000, 2000, 15000, 4000, ""),
	}
	var got []string
	for _, g := range blockGradGoals(rows) {
		got = append(got, g.Goal+": "+g.Measured+" "+map[bool]string{true: "met", false: "missed"}[g.Met])
	}
	want := []string{
		"go pre-LN block gradient, L = 1024: flash backward ≤ 1.3× plain backward (step − forward, CPU time): 1.20× CPU (360 ms vs 300 ms); wall 1.00×; whole step 1.12× CPU met",
		"go pre-LN block gradient at L = 16384, B1 E512 h8: flash fits where plain attention is refused: flash: 1.0 GiB peak RSS, step 9 s; plain: refused up front met",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("goals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
