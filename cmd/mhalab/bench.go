package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/xla"
)

// mhalab bench: one run that times multi-head attention side by side on every backend and on
// PyTorch, and measures what flash attention, the KV cache and checkpointing buy.
//
// Suites (--suites, default all):
//
//	mha         forward passes of self-attention MultiHeadAttention(x, x, x) on the shapes,
//	            plain and flash, causal or not: compile time, median, min, GFLOP/s, ratio to PyTorch
//	torch       the same shapes with nn.MultiheadAttention (parity/bench_torch.py), same thread count
//	decode      tokens/s of greedy decoding with a KV cache vs recomputing the whole sequence
//	memory      peak RSS of one attention forward pass, plain vs flash, L = 1k … 32k (one process each)
//	checkpoint  peak RSS of the gradients of N pre-LN blocks with and without checkpointing
//
// Results go to stdout as markdown tables and to a JSON file (--json).

var benchCmd = command{
	name: "bench",
	args: "[--quick] [--backends LIST] [--suites LIST] [--json FILE] [--python PATH] [--torch-device cpu|cuda] [--threads N] [--budget D]",
	summary: "time MHA on every backend and PyTorch side by side (markdown + JSON); KV-cache decoding; " +
		"peak memory of flash vs plain attention and of checkpointing",
}

func init() {
	benchCmd.run = runBenchCmd
	register(benchCmd)
}

// benchSuites are the suites in the order they run.
var benchSuites = []string{"mha", "torch", "decode", "memory", "checkpoint"}

type benchConfig struct {
	quick      bool
	backends   []string
	suites     map[string]bool
	jsonPath   string
	python     string
	script     string
	torchDev   string
	threads    int
	budget     time.Duration
	memTimeout time.Duration
	progress   bool
}

func runBenchCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(benchCmd.name)
	cfg := benchConfig{}
	fs.BoolVar(&cfg.quick, "quick", false, "small shapes and few runs (CI smoke test, well under a minute)")
	backendList := fs.String("backends", "", "comma-separated backends (default: every available one of go, xla:cpu, xla:cuda)")
	suiteList := fs.String("suites", strings.Join(benchSuites, ","), "comma-separated suites: "+strings.Join(benchSuites, ", "))
	fs.StringVar(&cfg.jsonPath, "json", filepath.Join("build", "bench", "bench.json"), "write the results as JSON to this file")
	fs.StringVar(&cfg.python, "python", "", "Pythons with PyTorch, comma-separated, each timed (default: $MHALAB_TORCH_VENV/bin/python, the venv of scripts/setup.sh, else python3)")
	fs.StringVar(&cfg.torchDev, "torch-device", "cpu", "device PyTorch runs on: cpu, or cuda (next to xla:cuda)")
	fs.StringVar(&cfg.script, "torch-script", "", "path of parity/bench_torch.py (default: found from the working directory)")
	fs.IntVar(&cfg.threads, "threads", runtime.NumCPU(), "PyTorch threads (Go and XLA use every core; keep equal to the core count for a fair comparison)")
	fs.DurationVar(&cfg.budget, "budget", 0, "time budget per case and backend for the timed runs (default 30s, --quick 3s); at least 3 runs")
	fs.DurationVar(&cfg.memTimeout, "mem-timeout", 20*time.Minute, "time limit of each memory measurement process")
	noProgress := fs.Bool("no-progress", false, "no progress bar (it is shown only when stderr is a terminal)")
	child := fs.String("child", "", "internal: run one memory measurement described by this JSON and print its result")
	if err := parseFlags(fs, benchCmd, args, stdout); err != nil {
		return err
	}
	if *child != "" {
		return runMemChild(*child, stdout)
	}
	cfg.suites = map[string]bool{}
	for _, s := range splitList(*suiteList) {
		if !slices.Contains(benchSuites, s) {
			return &usageError{fmt.Sprintf("--suites: unknown suite %q (valid: %s)", s, strings.Join(benchSuites, ", "))}
		}
		cfg.suites[s] = true
	}
	for _, b := range splitList(*backendList) {
		if err := xla.CheckSpec(b); err != nil || b == "" {
			return &usageError{fmt.Sprintf("--backends: %v", err)}
		}
		cfg.backends = append(cfg.backends, b)
	}
	if cfg.torchDev != "cpu" && cfg.torchDev != "cuda" {
		return &usageError{fmt.Sprintf("--torch-device %q: want cpu or cuda", cfg.torchDev)}
	}
	if cfg.threads < 1 {
		return &usageError{fmt.Sprintf("--threads %d: want at least 1", cfg.threads)}
	}
	if cfg.budget == 0 {
		cfg.budget = 30 * time.Second
		if cfg.quick {
			cfg.budget = 3 * time.Second
		}
	}
	cfg.progress = !*noProgress && isTerminal(os.Stderr)
	return runBench(stdout, stderr, cfg)
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// isTerminal reports whether f is a character device (a terminal), without x/term.
func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// ---- report ------------------------------------------------------------------------------

// benchReport is everything one run measured; it is also the JSON file's content.
type benchReport struct {
	Started    string         `json:"started"`
	Quick      bool           `json:"quick"`
	Machine    machineInfo    `json:"machine"`
	Backends   []backendEntry `json:"backends"`
	Torch      []torchInfo    `json:"torch,omitempty"`
	TorchNotes []string       `json:"torch_notes,omitempty"`
	MHA        []mhaResult    `json:"mha,omitempty"`
	Decode     []decodeResult `json:"decode,omitempty"`
	Memory     []memResult    `json:"memory,omitempty"`
	Checkpoint []memResult    `json:"checkpoint,omitempty"`
	Goals      []goalResult   `json:"goals,omitempty"`
}

type machineInfo struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	MemTotal   string `json:"mem_total"`
	Threads    int    `json:"torch_threads"`
}

type backendEntry struct {
	Spec   string `json:"spec"`
	Reason string `json:"reason"`
	Error  string `json:"error,omitempty"`
}

type torchInfo struct {
	Version       string `json:"torch"`
	BLAS          string `json:"blas"`
	Threads       int    `json:"threads"`
	CPUCapability string `json:"cpu_capability"`
	Device        string `json:"device"`
	Python        string `json:"python"`
}

// mhaCase is one forward-pass configuration.
type mhaCase struct {
	Group      string `json:"group"` // seed003, long, llm: shapes PyTorch is compared on
	B, L, E, H int
	Causal     bool `json:"causal"`
	Flash      bool `json:"flash"`
	Warmup     int  `json:"warmup"`
	Runs       int  `json:"runs"`
}

// key identifies the (shape, causal) pair PyTorch is timed on.
func (c mhaCase) key() string {
	if c.Causal {
		return c.Group + "/causal"
	}
	return c.Group
}

func (c mhaCase) shape() string { return fmt.Sprintf("B%d L%d E%d h%d", c.B, c.L, c.E, c.H) }

// flops counts the useful floating-point operations of one forward pass: the four projections
// (8·B·L·E²) and the two attention products (4·B·L²·E, half of it with a causal mask).
func (c mhaCase) flops() float64 {
	proj := 8 * float64(c.B) * float64(c.L) * float64(c.E) * float64(c.E)
	attn := 4 * float64(c.B) * float64(c.L) * float64(c.L) * float64(c.E)
	if c.Causal {
		attn /= 2
	}
	return proj + attn
}

func (c mhaCase) impl() string {
	if c.Flash {
		return "mhalib flash"
	}
	return "mhalib plain"
}

type mhaResult struct {
	mhaCase
	Backend   string    `json:"backend"`
	Impl      string    `json:"impl"`
	CompileMS float64   `json:"compile_ms"`
	TimesMS   []float64 `json:"times_ms"`
	MedianMS  float64   `json:"median_ms"`
	MinMS     float64   `json:"min_ms"`
	GFLOPS    float64   `json:"gflops"`
	// VsTorch is median / PyTorch's median for the same shape, per PyTorch (Impl of its rows).
	VsTorch map[string]float64 `json:"vs_torch,omitempty"`
	Error   string             `json:"error,omitempty"`
}

type decodeResult struct {
	Backend           string  `json:"backend"`
	Model             string  `json:"model"`
	Context           int     `json:"context"` // positions attended to by the timed steps
	CachedCompileMS   float64 `json:"cached_compile_ms"`
	CachedStepMS      float64 `json:"cached_step_ms"` // median per token
	CachedTokensPerS  float64 `json:"cached_tokens_per_s"`
	RecomputeMS       float64 `json:"recompute_ms"` // median per token (one forward over MaxLen positions)
	RecomputeTokPerS  float64 `json:"recompute_tokens_per_s"`
	Speedup           float64 `json:"speedup"`
	MaxLogitDiff      float64 `json:"max_logit_diff"` // cached vs recompute, last timed step
	Error             string  `json:"error,omitempty"`
	RecomputeCompileM float64 `json:"recompute_compile_ms"`
}

type goalResult struct {
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// ---- running -----------------------------------------------------------------------------

func runBench(stdout, stderr io.Writer, cfg benchConfig) error {
	rep := &benchReport{Started: time.Now().Format(time.RFC3339), Quick: cfg.quick}
	rep.Machine = machineInfo{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		LoadBefore: loadAverage(), MemTotal: memTotal(), Threads: cfg.threads}

	// Backends: the requested ones, else every available one.
	specs := cfg.backends
	if len(specs) == 0 {
		for _, info := range xla.Available() {
			if info.Available {
				specs = append(specs, info.Name)
			}
		}
	}
	live := map[string]backends.Backend{}
	for _, spec := range specs {
		b, reason, err := xla.NewWithReason(spec)
		entry := backendEntry{Spec: spec, Reason: reason}
		if err != nil {
			entry.Error = err.Error()
			fmt.Fprintf(stderr, "mhalab bench: backend %s unavailable: %v\n", spec, err)
		} else {
			live[spec] = b
			defer b.Finalize()
		}
		rep.Backends = append(rep.Backends, entry)
	}
	var order []string
	for _, e := range rep.Backends {
		if e.Error == "" {
			order = append(order, e.Spec)
		}
	}

	cases := mhaCases(cfg.quick)
	decodeCfg := decodeConfig(cfg.quick)
	memCfgs := memoryConfigs(cfg.quick, order, cfg.suites["memory"], cfg.suites["checkpoint"])
	bar := &progressBar{w: stderr, enabled: cfg.progress}
	// Cases grouped by the (shape, causal) pair PyTorch is timed on; PyTorch runs right before
	// mhalib on each group, so that both see the same machine load.
	var keys []string
	byKey := map[string][]mhaCase{}
	for _, c := range cases {
		if byKey[c.key()] == nil {
			keys = append(keys, c.key())
		}
		byKey[c.key()] = append(byKey[c.key()], c)
	}
	if cfg.suites["mha"] {
		bar.total += len(order) * len(cases)
	}
	if cfg.suites["torch"] {
		bar.total += len(keys)
	}
	if cfg.suites["decode"] {
		bar.total += len(order)
	}
	bar.total += len(memCfgs)

	// Each Python given (or the one found) times PyTorch; one that fails is dropped with a note.
	var pythons []string
	if cfg.suites["torch"] {
		pythons = splitList(cfg.python)
		if len(pythons) == 0 {
			pythons = []string{findPython("")}
		}
		bar.total += len(keys) * (len(pythons) - 1)
	}
	torchFailed := map[string]bool{}
	for _, key := range keys {
		for _, python := range pythons {
			bar.start("PyTorch nn.MultiheadAttention " + key)
			if torchFailed[python] {
				continue
			}
			info, results, note := benchTorch(cfg, python, byKey[key][:1])
			if info == nil {
				torchFailed[python] = true
				rep.TorchNotes = append(rep.TorchNotes, note)
				continue
			}
			if !slices.ContainsFunc(rep.Torch, func(t torchInfo) bool { return t.Python == info.Python }) {
				rep.Torch = append(rep.Torch, *info)
			}
			rep.MHA = append(rep.MHA, results...)
		}
		if !cfg.suites["mha"] {
			continue
		}
		for _, spec := range order {
			for _, c := range byKey[key] {
				bar.start(fmt.Sprintf("%s %s %s%s", spec, c.Group, c.impl(), causalSuffix(c.Causal)))
				rep.MHA = append(rep.MHA, benchMHA(live[spec], spec, c, cfg.budget))
			}
		}
	}
	if cfg.suites["decode"] {
		for _, spec := range order {
			bar.start(spec + " decoding: KV cache vs recompute")
			rep.Decode = append(rep.Decode, benchDecode(live[spec], spec, decodeCfg))
		}
	}
	for _, mc := range memCfgs {
		bar.start(mc.label())
		r := runMemMeasurement(mc, cfg.memTimeout)
		if mc.Kind == "ckpt" || mc.Kind == "autodiff" {
			rep.Checkpoint = append(rep.Checkpoint, r)
		} else {
			rep.Memory = append(rep.Memory, r)
		}
	}
	bar.finish()
	rep.Machine.LoadAfter = loadAverage()
	compareWithTorch(rep)
	if !cfg.quick {
		rep.Goals = evaluateGoals(rep) // the goals are stated for the full shapes
	}

	printReport(stdout, rep)
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, rep); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nJSON: %s\n", cfg.jsonPath)
	}
	// Failures of what must work are errors; a memory measurement that fails (plain attention
	// refused or killed at large L) is a result — except in --quick, where everything fits.
	for _, r := range rep.MHA {
		if r.Error != "" {
			return fmt.Errorf("%s %s on %s failed: %s", r.key(), r.Impl, r.Backend, r.Error)
		}
	}
	for _, r := range rep.Decode {
		if r.Error != "" {
			return fmt.Errorf("decoding on %s failed: %s", r.Backend, r.Error)
		}
	}
	if cfg.quick {
		for _, r := range append(slices.Clone(rep.Memory), rep.Checkpoint...) {
			if r.Error != "" {
				return fmt.Errorf("%s failed: %s", r.label(), r.Error)
			}
		}
	}
	return nil
}

func causalSuffix(causal bool) string {
	if causal {
		return " causal"
	}
	return ""
}

// mhaCases are the forward-pass shapes: seed 003's benchmark (B32 L128 D512 h8, 10 warm-up +
// 100 timed passes), a long sequence (B1 L4096 D512 h8), LLMs-from-scratch's shape (B8 L1024
// E768 h12), with causal variants and flash next to plain attention where it matters.
func mhaCases(quick bool) []mhaCase {
	if quick {
		return []mhaCase{
			{Group: "seed003", B: 4, L: 32, E: 64, H: 4, Warmup: 2, Runs: 5},
			{Group: "long", B: 1, L: 512, E: 64, H: 4, Warmup: 1, Runs: 3},
			{Group: "long", B: 1, L: 512, E: 64, H: 4, Flash: true, Warmup: 1, Runs: 3},
			{Group: "long", B: 1, L: 512, E: 64, H: 4, Causal: true, Flash: true, Warmup: 1, Runs: 3},
			{Group: "llm", B: 2, L: 128, E: 96, H: 6, Causal: true, Warmup: 1, Runs: 3},
		}
	}
	return []mhaCase{
		{Group: "seed003", B: 32, L: 128, E: 512, H: 8, Warmup: 10, Runs: 100},
		{Group: "seed003", B: 32, L: 128, E: 512, H: 8, Causal: true, Warmup: 10, Runs: 100},
		{Group: "long", B: 1, L: 4096, E: 512, H: 8, Warmup: 2, Runs: 20},
		{Group: "long", B: 1, L: 4096, E: 512, H: 8, Flash: true, Warmup: 2, Runs: 20},
		{Group: "long", B: 1, L: 4096, E: 512, H: 8, Causal: true, Warmup: 2, Runs: 20},
		{Group: "long", B: 1, L: 4096, E: 512, H: 8, Causal: true, Flash: true, Warmup: 2, Runs: 20},
		{Group: "llm", B: 8, L: 1024, E: 768, H: 12, Warmup: 2, Runs: 10},
		{Group: "llm", B: 8, L: 1024, E: 768, H: 12, Causal: true, Warmup: 2, Runs: 10},
		{Group: "llm", B: 8, L: 1024, E: 768, H: 12, Causal: true, Flash: true, Warmup: 2, Runs: 10},
	}
}

// benchMHA times self-attention MultiHeadAttention(x, x, x) on one backend: PreCompile, Warmup
// untimed passes (the first also initialises the weights), then passes timed one by one until
// Runs are done or the budget is spent (at least 3).
func benchMHA(backend backends.Backend, spec string, c mhaCase, budget time.Duration) mhaResult {
	res := mhaResult{mhaCase: c, Backend: spec, Impl: c.impl()}
	causal, formulation := mhalib.NoCausal, mhalib.HeadParallel
	if c.Causal {
		causal = mhalib.CausalTopLeft
	}
	if c.Flash {
		formulation = mhalib.Flash
	}
	ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
	ctx.SetParam(context.ParamInitialSeed, int64(1))
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, x *Node) *Node {
		return mhalib.MultiHeadAttention(ctx, x, x, x, c.H).Causal(causal).Formulation(formulation).Done() // [B, L, E]
	})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer exec.Finalize()
	x := uniformTensor(1, c.B, c.L, c.E)
	t, err := timeRuns(func() error { return exec.PreCompile(x) }, func() error {
		out, err := exec.Exec(x)
		if err != nil {
			return err
		}
		return finalizeAll(out)
	}, c.Warmup, c.Runs, budget)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.CompileMS, res.TimesMS = t.compileMS, t.timesMS
	res.MedianMS, res.MinMS = medianMS(t.timesMS), slices.Min(t.timesMS)
	res.GFLOPS = c.flops() / (res.MedianMS * 1e6)
	return res
}

// timing is what timeRuns measured.
type timing struct {
	compileMS float64
	timesMS   []float64
}

// timeRuns times compile once, run warmup times untimed, then run until runs timed runs are
// done or budget has passed (at least 3 timed runs).
func timeRuns(compile, run func() error, warmup, runs int, budget time.Duration) (timing, error) {
	var t timing
	start := time.Now()
	if err := compile(); err != nil {
		return t, err
	}
	t.compileMS = msSince(start)
	for range warmup {
		if err := run(); err != nil {
			return t, err
		}
	}
	start = time.Now()
	for len(t.timesMS) < runs {
		t0 := time.Now()
		if err := run(); err != nil {
			return t, err
		}
		t.timesMS = append(t.timesMS, msSince(t0))
		if len(t.timesMS) >= 3 && time.Since(start) > budget {
			break
		}
	}
	return t, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t)) / float64(time.Millisecond) }

// medianMS is the median of unsorted times.
func medianMS(times []float64) float64 {
	s := slices.Clone(times)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// uniformTensor returns a float32 tensor with entries uniform in [-1, 1).
func uniformTensor(seed uint64, dims ...int) *tensors.Tensor {
	rng := rand.New(rand.NewPCG(seed, 0x62656e6368)) // "bench"
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = 2*rng.Float32() - 1
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// ---- PyTorch -----------------------------------------------------------------------------

// torchNotInstalled is what the report says when no Python with PyTorch is found.
const torchNotInstalled = "PyTorch: not installed (run scripts/setup.sh)"

// benchTorch times the distinct (shape, causal) pairs of cases with parity/bench_torch.py.
// It returns nil info and a note when PyTorch cannot be run.
func benchTorch(cfg benchConfig, python string, cases []mhaCase) (*torchInfo, []mhaResult, string) {
	script := cfg.script
	if script == "" {
		script = findRepoFile(filepath.Join("parity", "bench_torch.py"))
	}
	if python == "" {
		return nil, nil, torchNotInstalled
	}
	if script == "" {
		return nil, nil, "PyTorch: parity/bench_torch.py not found (run from the repository, or pass --torch-script)"
	}
	type torchCase struct {
		Key       string  `json:"key"`
		Batch     int     `json:"batch"`
		Seq       int     `json:"seq"`
		Embed     int     `json:"embed"`
		Heads     int     `json:"heads"`
		Causal    bool    `json:"causal"`
		Warmup    int     `json:"warmup"`
		Runs      int     `json:"runs"`
		BudgetSec float64 `json:"budget_s"`
	}
	req := struct {
		Threads int         `json:"threads"`
		Device  string      `json:"device"`
		Cases   []torchCase `json:"cases"`
	}{Threads: cfg.threads, Device: cfg.torchDev}
	byKey := map[string]mhaCase{}
	for _, c := range cases {
		if _, dup := byKey[c.key()]; dup {
			continue
		}
		byKey[c.key()] = c
		req.Cases = append(req.Cases, torchCase{Key: c.key(), Batch: c.B, Seq: c.L, Embed: c.E, Heads: c.H,
			Causal: c.Causal, Warmup: c.Warmup, Runs: c.Runs, BudgetSec: cfg.budget.Seconds()})
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, nil, "PyTorch: " + err.Error()
	}
	cmd := exec.Command(python, script)
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Sprintf("PyTorch: %s %s failed: %v: %s", python, script, err, lastLines(errOut.String(), 5))
	}
	var ans struct {
		Error         string `json:"error"`
		Torch         string `json:"torch"`
		BLAS          string `json:"blas"`
		Threads       int    `json:"threads"`
		CPUCapability string `json:"cpu_capability"`
		Device        string `json:"device"`
		Results       []struct {
			Key      string    `json:"key"`
			TimesMS  []float64 `json:"times_ms"`
			MedianMS float64   `json:"median_ms"`
			MinMS    float64   `json:"min_ms"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		return nil, nil, fmt.Sprintf("PyTorch: unreadable answer from %s: %v", script, err)
	}
	switch {
	case strings.HasPrefix(ans.Error, "PyTorch not installed"):
		return nil, nil, torchNotInstalled + " — " + python + ": " + ans.Error
	case ans.Error != "":
		return nil, nil, "PyTorch: " + ans.Error
	}
	info := &torchInfo{Version: ans.Torch, BLAS: ans.BLAS, Threads: ans.Threads, CPUCapability: ans.CPUCapability,
		Device: ans.Device, Python: python}
	var results []mhaResult
	for _, r := range ans.Results {
		c := byKey[r.Key]
		c.Flash = false
		res := mhaResult{mhaCase: c, Backend: "torch " + cfg.torchDev, Impl: torchImpl(ans.Torch),
			TimesMS: r.TimesMS, MedianMS: r.MedianMS, MinMS: r.MinMS, GFLOPS: c.flops() / (r.MedianMS * 1e6)}
		results = append(results, res)
	}
	return info, results, ""
}

// findPython returns the Python to run PyTorch with: flagValue, $MHALAB_TORCH_VENV/bin/python,
// the venv scripts/setup.sh makes, or python3 on PATH ("" if none exists).
func findPython(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	var candidates []string
	if v := os.Getenv("MHALAB_TORCH_VENV"); v != "" {
		candidates = append(candidates, filepath.Join(v, "bin", "python"))
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache")
		}
	}
	if cache != "" {
		candidates = append(candidates, filepath.Join(cache, "mhalab", "torch-venv", "bin", "python"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p
	}
	return ""
}

// findRepoFile looks for rel in the working directory and its parents, then next to the
// executable and its parent; "" if not found.
func findRepoFile(rel string) string {
	var dirs []string
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			dirs = append(dirs, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe), filepath.Dir(filepath.Dir(exe)))
	}
	for _, d := range dirs {
		p := filepath.Join(d, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// torchImpl names PyTorch's rows: "PyTorch 2.15.0+cu132 nn.MHA".
func torchImpl(version string) string { return "PyTorch " + version + " nn.MHA" }

// compareWithTorch fills VsTorch of every mhalib result with each PyTorch's time for its shape.
func compareWithTorch(rep *benchReport) {
	torch := map[string]map[string]float64{} // impl → key → median
	for _, r := range rep.MHA {
		if r.isTorch() {
			if torch[r.Impl] == nil {
				torch[r.Impl] = map[string]float64{}
			}
			torch[r.Impl][r.key()] = r.MedianMS
		}
	}
	for i, r := range rep.MHA {
		for impl, times := range torch {
			if t, ok := times[r.key()]; ok && r.MedianMS > 0 {
				if rep.MHA[i].VsTorch == nil {
					rep.MHA[i].VsTorch = map[string]float64{}
				}
				rep.MHA[i].VsTorch[impl] = r.MedianMS / t
			}
		}
	}
}

func (r mhaResult) isTorch() bool { return strings.HasPrefix(r.Impl, "PyTorch") }

// fastestTorch returns PyTorch's fastest median for key and which PyTorch that was.
func fastestTorch(rep *benchReport, key string) (impl string, medianMS float64) {
	for _, r := range rep.MHA {
		if r.isTorch() && r.key() == key && r.Error == "" && (medianMS == 0 || r.MedianMS < medianMS) {
			impl, medianMS = r.Impl, r.MedianMS
		}
	}
	return impl, medianMS
}

// ---- decoding ----------------------------------------------------------------------------

type decodeSettings struct {
	model mhalib.Decoder
	steps int // timed cached steps, at the end of the context
	runs  int // timed recomputations
}

func decodeConfig(quick bool) decodeSettings {
	if quick {
		return decodeSettings{model: mhalib.Decoder{Vocab: 64, Embed: 64, Heads: 4, Layers: 1, MaxLen: 64}, steps: 4, runs: 3}
	}
	return decodeSettings{model: mhalib.Decoder{Vocab: 1024, Embed: 512, Heads: 8, Layers: 2, MaxLen: 2048}, steps: 32, runs: 3}
}

// benchDecode measures greedy decoding of one sequence at the end of a MaxLen context:
// with the KV cache (prefill MaxLen − steps tokens, then time steps single-token steps) and
// without (each token recomputes the model over all MaxLen positions: static shapes, causal, so
// the padding after the current position changes nothing).
func benchDecode(backend backends.Backend, spec string, s decodeSettings) decodeResult {
	m := s.model
	res := decodeResult{Backend: spec, Context: m.MaxLen,
		Model: fmt.Sprintf("Decoder V%d E%d h%d layers %d, L %d", m.Vocab, m.Embed, m.Heads, m.Layers, m.MaxLen)}
	fail := func(err error) decodeResult { res.Error = err.Error(); return res }
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1))
	session, err := mhalib.NewDecodeSession(backend, ctx, m, 1)
	if err != nil {
		return fail(err)
	}
	defer session.Finalize()
	rng := rand.New(rand.NewPCG(2, 3))
	seq := make([]int32, m.MaxLen)
	for i := range seq {
		seq[i] = int32(rng.IntN(m.Vocab))
	}
	prefill := m.MaxLen - s.steps
	if _, err := session.Step(tensors.FromFlatDataAndDimensions(slices.Clone(seq[:prefill]), 1, prefill)); err != nil {
		return fail(err)
	}
	// The first single-token step compiles the step graph.
	start := time.Now()
	var last *tensors.Tensor
	if last, err = session.Step(tensors.FromFlatDataAndDimensions([]int32{seq[prefill]}, 1, 1)); err != nil {
		return fail(err)
	}
	res.CachedCompileMS = msSince(start)
	var stepMS []float64
	for i := prefill + 1; i < m.MaxLen; i++ {
		t0 := time.Now()
		if last, err = session.Step(tensors.FromFlatDataAndDimensions([]int32{seq[i]}, 1, 1)); err != nil {
			return fail(err)
		}
		stepMS = append(stepMS, msSince(t0))
	}
	res.CachedStepMS = medianMS(stepMS)
	res.CachedTokensPerS = 1000 / res.CachedStepMS

	recompute, err := context.NewExec(backend, ctx, func(ctx *context.Context, tokens *Node) *Node {
		return m.Logits(ctx, tokens) // [1, MaxLen, V]
	})
	if err != nil {
		return fail(err)
	}
	defer recompute.Finalize()
	tokens := tensors.FromFlatDataAndDimensions(slices.Clone(seq), 1, m.MaxLen)
	var full *tensors.Tensor
	t, err := timeRuns(func() error { return recompute.PreCompile(tokens) }, func() error {
		out, err := recompute.Exec(tokens)
		if err == nil {
			full = out[0]
		}
		return err
	}, 1, s.runs, time.Minute)
	if err != nil {
		return fail(err)
	}
	res.RecomputeCompileM = t.compileMS
	res.RecomputeMS = medianMS(t.timesMS)
	res.RecomputeTokPerS = 1000 / res.RecomputeMS
	res.Speedup = res.CachedTokensPerS / res.RecomputeTokPerS
	// The last cached step's logits are the recompute's last row.
	got, want := tensors.MustCopyFlatData[float32](last), tensors.MustCopyFlatData[float32](full)
	want = want[len(want)-m.Vocab:]
	for i := range got {
		res.MaxLogitDiff = max(res.MaxLogitDiff, float64(abs32(got[i]-want[i])))
	}
	return res
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// ---- output ------------------------------------------------------------------------------

func printReport(w io.Writer, rep *benchReport) {
	fmt.Fprintf(w, "# mhalab bench%s — %s\n\n", map[bool]string{true: " --quick", false: ""}[rep.Quick], rep.Started)
	fmt.Fprintf(w, "Machine: %d CPUs (GOMAXPROCS %d), %s, memory %s, load average before %s, after %s.\n",
		rep.Machine.CPUs, rep.Machine.GOMAXPROCS, rep.Machine.GoVersion, rep.Machine.MemTotal, rep.Machine.LoadBefore, rep.Machine.LoadAfter)
	for _, b := range rep.Backends {
		if b.Error != "" {
			fmt.Fprintf(w, "Backend %s: unavailable: %s\n", b.Spec, b.Error)
		} else {
			fmt.Fprintf(w, "Backend %s\n", b.Reason)
		}
	}
	var torchImpls []string
	for _, t := range rep.Torch {
		fmt.Fprintf(w, "PyTorch %s (%s, BLAS %s, CPU capability %s), %d threads, device %s.\n",
			t.Version, t.Python, t.BLAS, t.CPUCapability, t.Threads, t.Device)
		torchImpls = append(torchImpls, torchImpl(t.Version))
	}
	for _, note := range rep.TorchNotes {
		fmt.Fprintln(w, note)
	}

	if len(rep.MHA) > 0 {
		fmt.Fprintf(w, "\n## Forward pass, self-attention MultiHeadAttention(x, x, x), float32\n\n")
		header, rule := "| case | shape | causal | implementation | backend | compile | median | min | runs | GFLOP/s |", "|---|---|---|---|---|---:|---:|---:|---:|---:|"
		for _, impl := range torchImpls {
			header += " × " + strings.TrimSuffix(impl, " nn.MHA") + " |"
			rule += "---:|"
		}
		fmt.Fprintln(w, header)
		fmt.Fprintln(w, rule)
		rows := slices.Clone(rep.MHA)
		slices.SortStableFunc(rows, func(a, b mhaResult) int { return strings.Compare(a.key(), b.key()) })
		for _, r := range rows {
			compile := "—"
			if !r.isTorch() {
				compile = fmtMS(r.CompileMS)
			}
			if r.Error != "" {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | error: %s |||||\n", r.Group, r.shape(), yesNo(r.Causal), r.Impl, r.Backend, r.Error)
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %.1f |", r.Group, r.shape(), yesNo(r.Causal),
				r.Impl, r.Backend, compile, fmtMS(r.MedianMS), fmtMS(r.MinMS), len(r.TimesMS), r.GFLOPS)
			for _, impl := range torchImpls {
				if v, ok := r.VsTorch[impl]; ok {
					fmt.Fprintf(w, " %.2f× |", v)
				} else {
					fmt.Fprint(w, " — |")
				}
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, "\nGFLOP/s counts the projections (8·B·L·E²) and the attention products (4·B·L²·E, half when causal).")
	}
	if len(rep.Decode) > 0 {
		fmt.Fprintf(w, "\n## Greedy decoding: KV cache vs recompute (one sequence, tokens at the end of the context)\n\n")
		fmt.Fprintln(w, "| backend | model | cached: ms/token | tokens/s | recompute: ms/token | tokens/s | speed-up | max |Δlogit| |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
		for _, r := range rep.Decode {
			if r.Error != "" {
				fmt.Fprintf(w, "| %s | %s | error: %s ||||||\n", r.Backend, r.Model, r.Error)
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.1f | %s | %.2f | %.0f× | %.1e |\n", r.Backend, r.Model, fmtMS(r.CachedStepMS),
				r.CachedTokensPerS, fmtMS(r.RecomputeMS), r.RecomputeTokPerS, r.Speedup, r.MaxLogitDiff)
		}
	}
	if len(rep.Memory) > 0 {
		fmt.Fprintf(w, "\n## Peak memory of one attention forward pass (q, k, v [1, 8, L, 64] float32; one process each)\n\n")
		printMemTable(w, rep.Memory)
	}
	if len(rep.Checkpoint) > 0 {
		fmt.Fprintf(w, "\n## Peak memory of the gradients of a stack of pre-LN blocks, with and without checkpointing\n\n")
		printMemTable(w, rep.Checkpoint)
	}
	if len(rep.Goals) > 0 {
		fmt.Fprintf(w, "\n## Goals\n\n| goal | measured | |\n|---|---|---|\n")
		for _, g := range rep.Goals {
			fmt.Fprintf(w, "| %s | %s | %s |\n", g.Goal, g.Measured, map[bool]string{true: "met", false: "missed"}[g.Met])
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// fmtMS formats milliseconds with 3 significant digits.
func fmtMS(v float64) string {
	return ms(time.Duration(v * float64(time.Millisecond)))
}

func writeJSON(path string, rep *benchReport) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// loadAverage returns the 1, 5 and 15-minute load averages ("?" where unknown).
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			var kb int64
			if _, err := fmt.Sscan(f[1], &kb); err == nil {
				return humanize.IBytes(uint64(kb * 1024))
			}
		}
	}
	return "?"
}

// ---- goals -------------------------------------------------------------------------------

// evaluateGoals checks the goals against what this run measured (goals whose
// measurements are missing are left out).
func evaluateGoals(rep *benchReport) []goalResult {
	var goals []goalResult
	find := func(key, backend string, flash bool) *mhaResult {
		for i, r := range rep.MHA {
			if r.key() == key && r.Backend == backend && r.Flash == flash && r.Error == "" && !r.isTorch() {
				return &rep.MHA[i]
			}
		}
		return nil
	}
	best := func(key, backend string) *mhaResult {
		a, b := find(key, backend, false), find(key, backend, true)
		if a == nil || (b != nil && b.MedianMS < a.MedianMS) {
			return b
		}
		return a
	}
	for _, g := range []struct {
		backend string
		limit   float64
	}{{"xla:cpu", 1.0}, {"go", 8.0}} {
		for _, key := range []string{"seed003", "long"} {
			impl, t := fastestTorch(rep, key)
			if r := best(key, g.backend); r != nil && t > 0 {
				ratio := r.MedianMS / t
				goals = append(goals, goalResult{
					Goal:     fmt.Sprintf("%s %s ≤ %.0f× PyTorch (the fastest PyTorch measured)", g.backend, key, g.limit),
					Measured: fmt.Sprintf("%.2f× (%s %s vs %s %s)", ratio, r.Impl, fmtMS(r.MedianMS), strings.TrimSuffix(impl, " nn.MHA"), fmtMS(t)),
					Met:      ratio <= g.limit})
			}
		}
	}
	for _, spec := range []string{"xla:cpu"} {
		for _, key := range []string{"long", "long/causal"} {
			plain, flash := find(key, spec, false), find(key, spec, true)
			if plain != nil && flash != nil {
				ratio := flash.MedianMS / plain.MedianMS
				goals = append(goals, goalResult{Goal: fmt.Sprintf("%s %s: flash ≤ 1.5× plain", spec, key),
					Measured: fmt.Sprintf("%.2f× (%s vs %s)", ratio, fmtMS(flash.MedianMS), fmtMS(plain.MedianMS)), Met: ratio <= 1.5})
			}
		}
	}
	for _, m := range rep.Memory {
		if m.Kind == "flash" && m.L == 32768 && m.Backend == "xla:cpu" && m.Error == "" {
			goals = append(goals, goalResult{Goal: "xla:cpu flash forward at L = 32768, B1 h8 dk64 within 2 GiB peak RSS",
				Measured: humanize.IBytes(uint64(m.PeakRSSKiB * 1024)), Met: m.PeakRSSKiB*1024 <= 2<<30})
		}
	}
	for _, d := range rep.Decode {
		if d.Error == "" && d.Context >= 2048 {
			goals = append(goals, goalResult{Goal: d.Backend + " decoding with KV cache ≥ 10× recompute (L 2048, D 512, h 8)",
				Measured: fmt.Sprintf("%.0f× (%.1f vs %.2f tokens/s)", d.Speedup, d.CachedTokensPerS, d.RecomputeTokPerS), Met: d.Speedup >= 10})
		}
	}
	return goals
}

// ---- progress ----------------------------------------------------------------------------

// progressBar draws "[#####.....] 3/20 label" on one terminal line.
type progressBar struct {
	w       io.Writer
	enabled bool
	total   int
	done    int
	started bool
}

func (p *progressBar) start(label string) {
	if p.started {
		p.done++
	}
	p.started = true
	if !p.enabled || p.total == 0 {
		return
	}
	const width = 30
	filled := width * p.done / p.total
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.done, p.total, label)
}

func (p *progressBar) finish() {
	if p.enabled && p.started {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
