package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/xla"
)

// Groups returns the groups of forward-pass cases (Config.Groups), a fresh slice.
func Groups() []string { return slices.Clone(groups) }

// Suites returns the suites in the order Run runs them, a fresh slice.
func Suites() []string { return slices.Clone(suites) }

var groups = []string{"seed003", "long", "llm"}

var suites = []string{"mha", "torch", "products", "decode", "minilm", "smollm2", "explore", "modern", "memory", "checkpoint", "devices"}

// Config is what one Run measures and where it writes. The zero value of a field means its
// default, as documented on the field.
type Config struct {
	// Quick selects small shapes and few runs (a smoke test, well under a minute).
	Quick bool
	// Backends are the backend specs to time ("go", "xla:cpu", "xla:cuda"); empty: every
	// available one.
	Backends []string
	// Suites are the suites to run (names from Suites); empty: all of them.
	Suites []string
	// Groups restricts the forward-pass cases (mha and torch suites) to these groups (seed003,
	// long, llm); empty: all of them.
	Groups []string
	// JSONPath is the file the report is written to as JSON; empty: none.
	JSONPath string
	// ComparePath is the JSON report of a previous run to compare this one with (the change of
	// every forward-pass case's median and ratio to PyTorch); empty: none.
	ComparePath string
	// Pythons are the Python interpreters with PyTorch, each timed in its own column; empty:
	// $MHALAB_TORCH_VENV/bin/python, the venv of scripts/setup.sh, else python3 on PATH.
	Pythons []string
	// LlamaPython is the Python with llama-cpp-python that times llama.cpp in the smollm2 suite;
	// empty: $MHALAB_LLAMA_VENV/bin/python, the venv of scripts/setup.sh --only llama, else the
	// PyTorch Python. Without llama-cpp-python the suite says so in a note.
	LlamaPython string
	// TorchScript is the path of parity/bench_torch.py; empty: found from the working directory
	// and the executable's.
	TorchScript string
	// TorchDevice is the device PyTorch runs on: "cpu" (default) or "cuda".
	TorchDevice string
	// Threads is the number of PyTorch threads; 0: runtime.NumCPU().
	Threads int
	// Budget is the time budget per case and backend for the timed runs (at least 3 runs
	// happen whatever the budget); 0: 30 s, or 3 s with Quick.
	Budget time.Duration
	// MemTimeout is the time limit of each memory measurement process; 0: 20 minutes.
	MemTimeout time.Duration
	// Devices is the largest device count the devices suite uses on an XLA backend (1, 2, 4, …
	// up to it): for xla:cpu, the backend is created with that many virtual devices; 0: the
	// backend's own count (4 for xla:cpu).
	Devices int
	// Progress draws a progress bar on the stderr writer of Run (for a terminal).
	Progress bool
	// ChildCommand is the command line that runs one memory measurement: Run appends the
	// measurement's JSON description as the last argument; the command must call RunChild with
	// it. Needed by the memory and checkpoint suites (each measurement is a process of its
	// own, so that its peak RSS is its own).
	ChildCommand []string
}

// withDefaults checks cfg and fills in the defaults.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Suites) == 0 {
		cfg.Suites = slices.Clone(suites)
	}
	for _, s := range cfg.Suites {
		if !slices.Contains(suites, s) {
			return cfg, fmt.Errorf("bench: unknown suite %q (valid: %s)", s, strings.Join(suites, ", "))
		}
	}
	for _, b := range cfg.Backends {
		if b == "" {
			return cfg, fmt.Errorf("bench: empty backend name (valid: %s)", strings.Join(xla.Specs(), ", "))
		}
		if b == GoWithoutFastGo {
			continue
		}
		if err := xla.CheckSpec(b); err != nil {
			return cfg, err
		}
	}
	for _, g := range cfg.Groups {
		if !slices.Contains(groups, g) {
			return cfg, fmt.Errorf("bench: unknown case group %q (valid: %s)", g, strings.Join(groups, ", "))
		}
	}
	switch cfg.TorchDevice {
	case "":
		cfg.TorchDevice = "cpu"
	case "cpu", "cuda":
	default:
		return cfg, fmt.Errorf("bench: PyTorch device %q: want cpu or cuda", cfg.TorchDevice)
	}
	switch {
	case cfg.Threads == 0:
		cfg.Threads = runtime.NumCPU()
	case cfg.Threads < 0:
		return cfg, fmt.Errorf("bench: %d PyTorch threads: want at least 1", cfg.Threads)
	}
	switch {
	case cfg.Budget == 0 && cfg.Quick:
		cfg.Budget = 3 * time.Second
	case cfg.Budget == 0:
		cfg.Budget = 30 * time.Second
	case cfg.Budget < 0:
		return cfg, fmt.Errorf("bench: budget %s: want a positive duration", cfg.Budget)
	}
	switch {
	case cfg.MemTimeout == 0:
		cfg.MemTimeout = 20 * time.Minute
	case cfg.MemTimeout < 0:
		return cfg, fmt.Errorf("bench: memory time limit %s: want a positive duration", cfg.MemTimeout)
	}
	if (slices.Contains(cfg.Suites, "memory") || slices.Contains(cfg.Suites, "checkpoint")) && len(cfg.ChildCommand) == 0 {
		return cfg, errors.New("bench: the memory and checkpoint suites need Config.ChildCommand (the command line that calls RunChild)")
	}
	return cfg, nil
}

// firstOf returns the first element of xs, or "".
func firstOf(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}

// SplitList splits a comma-separated list, dropping blanks: "a, b,," → [a b].
func SplitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Run measures what cfg asks for, prints the report to stdout as markdown tables (and writes
// it to cfg.JSONPath) and returns an error when a measurement that must work failed. Progress
// and unavailable backends are reported on stderr. When ctx ends (Ctrl-C), Run stops after the
// measurement under way and returns ctx's error, printing and writing nothing.
func Run(ctx context.Context, stdout, stderr io.Writer, cfg Config) error {
	_, err := run(ctx, stdout, stderr, cfg)
	return err
}

// run is Run, also returning the report.
func run(ctx context.Context, stdout, stderr io.Writer, cfg Config) (*benchReport, error) {
	command := cfg.commandLine()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var previous *benchReport
	if cfg.ComparePath != "" {
		// Read before measuring anything: a wrong path fails at once.
		if previous, err = readReport(cfg.ComparePath); err != nil {
			return nil, err
		}
	}
	suites := map[string]bool{}
	for _, s := range cfg.Suites {
		suites[s] = true
	}
	rep := &benchReport{Started: time.Now().Format(time.RFC3339), Command: command, Quick: cfg.Quick}
	rep.Machine = machineInfo{CPUs: runtime.NumCPU(), CPUModel: cpuModel(), XLAFlags: os.Getenv("XLA_FLAGS"), Tunables: os.Getenv("GLIBC_TUNABLES"), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		LoadBefore: loadAverage(), MemTotal: memTotal(), Threads: cfg.Threads, FastGo: fastgo.Status()}
	measurePeak(&rep.Machine, cfg.Quick) // after the load average: its threads would raise it

	// Backends: the requested ones, else every available one.
	specs := cfg.Backends
	if len(specs) == 0 {
		for _, info := range xla.Available() {
			if info.Available {
				specs = append(specs, info.Name)
			}
		}
	}
	live := map[string]backends.Backend{}
	for _, spec := range specs {
		b, reason, err := newBackendDevices(spec, cfg.Devices)
		entry := backendEntry{Spec: spec, Reason: reason}
		if err != nil {
			entry.Error = err.Error()
			fmt.Fprintf(stderr, "mhalab bench: backend %s unavailable: %v\n", spec, err)
		} else {
			live[spec] = b
			defer xla.Close(b) // Finalize once the dropped buffers are freed
		}
		rep.Backends = append(rep.Backends, entry)
	}
	var order []string
	for _, e := range rep.Backends {
		if e.Error == "" {
			order = append(order, e.Spec)
		}
	}

	cases := mhaCases(cfg.Quick)
	if len(cfg.Groups) > 0 {
		cases = slices.DeleteFunc(cases, func(c mhaCase) bool { return !slices.Contains(cfg.Groups, c.Group) })
	}
	decodeCfg := decodeConfig(cfg.Quick)
	memCfgs := memoryConfigs(cfg.Quick, order, suites["memory"], suites["checkpoint"])
	bar := &progressBar{w: stderr, enabled: cfg.Progress}
	// Cases grouped by the (shape, causal) pair PyTorch is timed on.
	var keys []string
	byKey := map[string][]mhaCase{}
	for _, c := range cases {
		if byKey[c.key()] == nil {
			keys = append(keys, c.key())
		}
		byKey[c.key()] = append(byKey[c.key()], c)
	}
	if suites["mha"] {
		bar.total += len(order) * len(cases)
	}

	// Each Python given (or the one found) times PyTorch; one that fails is dropped with a note.
	var pythons []string
	if suites["torch"] {
		pythons = cfg.Pythons
		if len(pythons) == 0 {
			pythons = []string{findPython("")}
		}
		// PyTorch runs once per shape, and once more after each mhalib case of that shape.
		perKey := 1
		for _, key := range keys {
			if suites["mha"] {
				perKey = 1 + len(order)*len(byKey[key])
			}
			bar.total += perKey * len(pythons)
		}
	}
	if suites["products"] {
		bar.total += 4 * len(productCases(cases)) * len(order) // four products per case
	}
	if suites["decode"] {
		bar.total += len(order)
	}
	if suites["minilm"] {
		bar.total++
	}
	if suites["smollm2"] {
		bar.total++
	}
	if suites["modern"] {
		bar.total += 1 + 3*len(order)
	}
	if suites["devices"] {
		bar.total += len(order) * 3 * len(deviceCounts(max(cfg.Devices, 4)))
	}
	bar.total += len(memCfgs)

	torchFailed := map[string]bool{}
	var torchRuns []mhaResult // every PyTorch measurement, pooled per shape at the end
	// timeTorch times PyTorch on key's shape with every Python that works, and returns the
	// results by PyTorch (Impl).
	timeTorch := func(key, when string) map[string]mhaResult {
		got := map[string]mhaResult{}
		for _, python := range pythons {
			bar.start("PyTorch nn.MultiheadAttention " + key + when)
			if torchFailed[python] || ctx.Err() != nil {
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
			for _, r := range results {
				torchRuns = append(torchRuns, r)
				got[r.Impl] = r
			}
		}
		return got
	}
	for _, key := range keys {
		if ctx.Err() != nil {
			break
		}
		var before map[string]mhaResult
		if len(pythons) > 0 {
			before = timeTorch(key, "")
		}
		if !suites["mha"] {
			continue
		}
		// PyTorch is timed right before and right after each mhalib case, so that the ratio of
		// each case compares times measured under (nearly) the same machine load.
		for _, spec := range order {
			for _, c := range byKey[key] {
				if ctx.Err() != nil {
					break
				}
				bar.start(fmt.Sprintf("%s %s %s%s", spec, c.Group, c.impl(), causalSuffix(c.Causal)))
				var r mhaResult
				withFastGo(spec, func() { r = benchMHA(live[spec], spec, c, cfg.Budget) })
				r.Load = loadAverage()
				if len(pythons) > 0 {
					after := timeTorch(key, " (after "+spec+" "+c.impl()+")")
					r.Torch = pairTorch(before, after)
					before = after
				}
				rep.MHA = append(rep.MHA, r)
			}
		}
	}
	rep.MHA = append(rep.MHA, poolTorch(torchRuns)...)
	if suites["decode"] {
		for _, spec := range order {
			if ctx.Err() != nil {
				break
			}
			bar.start(spec + " decoding: KV cache vs recompute")
			rep.Decode = append(rep.Decode, benchDecode(live[spec], spec, decodeCfg))
		}
	}
	if suites["minilm"] && ctx.Err() == nil {
		bar.start("all-MiniLM-L6-v2 sentence embeddings")
		rep.MiniLM = benchMiniLM(cfg, findPython(firstOf(cfg.Pythons)), order, live)
	}
	if suites["smollm2"] && ctx.Err() == nil {
		bar.start("SmolLM2-135M-Instruct generation and KV cache")
		python := findPython(firstOf(cfg.Pythons))
		rep.SmolLM2 = benchSmolLM2(cfg, python, findLlamaPython(cfg.LlamaPython, python), order, live)
	}
	if suites["explore"] && ctx.Err() == nil {
		bar.start("the live explorer: updates and generated tokens")
		rep.Explore = benchExplore(cfg, order)
	}
	if suites["modern"] && ctx.Err() == nil {
		rep.Modern = benchModern(cfg, findPython(firstOf(cfg.Pythons)), order, live, bar)
	}
	if suites["devices"] && ctx.Err() == nil {
		rep.Devices = benchDevices(order, live, cfg.Devices, cfg.Quick, cfg.Budget, bar)
	}
	// The products last of the timed suites, a diagnostic that must not move what the others
	// measure: their operands and outputs (up to 512 MiB each) come after every other timing.
	// (The two full runs with them right after mha timed XLA's KV-cache decoding step of the
	// modern suite 15–21% slower than runs without them; products then modern alone did not,
	// so the cause is not known. The run with them here, last, did not either.)
	if suites["products"] && ctx.Err() == nil {
		for _, c := range productCases(cases) {
			for _, spec := range order {
				fused := live[spec] != nil && live[spec].Name() == "xla" // mhalib's inProjection: one product on XLA
				for _, p := range c.products(fused) {
					if ctx.Err() != nil {
						break
					}
					bar.start(fmt.Sprintf("%s %s %s", spec, c.Group, p.Name))
					var r productResult
					withFastGo(spec, func() { r = benchProduct(live[spec], spec, c, p, cfg.Budget/4) })
					rep.Products = append(rep.Products, r)
				}
			}
		}
	}
	for _, mc := range memCfgs {
		if ctx.Err() != nil {
			break
		}
		bar.start(mc.label())
		r := runMemMeasurement(ctx, mc, cfg.MemTimeout, cfg.ChildCommand)
		switch {
		case isBlockGrad(mc.Kind):
			rep.BlockGrad = append(rep.BlockGrad, r)
		case mc.Kind == "ckpt" || mc.Kind == "autodiff":
			rep.Checkpoint = append(rep.Checkpoint, r)
		default:
			rep.Memory = append(rep.Memory, r)
		}
	}
	bar.finish()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	finishPeak(rep, cfg.Quick) // before the load average: its threads would raise it
	rep.Machine.LoadAfter = loadAverage()
	rep.Machine.Busy = busyWarning(rep)
	compareWithTorch(rep)
	if !cfg.Quick {
		rep.Goals = evaluateGoals(rep) // the goals are stated for the full shapes
	}

	printReport(stdout, rep)
	if previous != nil {
		printMachineChange(stdout, previous, rep)
		printComparisons(stdout, previous, rep, cfg.ComparePath)
	}
	if cfg.JSONPath != "" {
		if err := writeJSON(cfg.JSONPath, rep); err != nil {
			return rep, err
		}
		fmt.Fprintf(stdout, "\nJSON: %s\n", cfg.JSONPath)
	}
	// Failures of what must work are errors; a memory measurement that fails (plain attention
	// refused or killed at large L) is a result — except in --quick, where everything fits.
	for _, r := range rep.MHA {
		if r.Error != "" {
			return rep, fmt.Errorf("%s %s on %s failed: %s", r.key(), r.Impl, r.Backend, r.Error)
		}
	}
	for _, r := range rep.Decode {
		if r.Error != "" {
			return rep, fmt.Errorf("decoding on %s failed: %s", r.Backend, r.Error)
		}
	}
	for _, r := range rep.MiniLM {
		if r.Error != "" {
			return rep, fmt.Errorf("all-MiniLM-L6-v2 on %s failed: %s", r.Backend, r.Error)
		}
	}
	for _, r := range rep.SmolLM2.Gen {
		if r.Error != "" {
			return rep, fmt.Errorf("SmolLM2-135M-Instruct on %s failed: %s", r.Backend, r.Error)
		}
	}
	for _, r := range rep.SmolLM2.KV {
		if r.Error != "" {
			return rep, fmt.Errorf("SmolLM2-135M-Instruct KV cache with %d heads on %s failed: %s", r.KVHeads, r.Backend, r.Error)
		}
	}
	if rep.Modern != nil {
		for _, r := range rep.Modern.Window {
			if r.Error != "" {
				return rep, fmt.Errorf("sliding-window %s %s on %s failed: %s", r.Impl, r.Mask, r.Backend, r.Error)
			}
		}
		for _, r := range rep.Modern.Decode {
			if r.Error != "" {
				return rep, fmt.Errorf("GQA decoding with %d KV heads on %s failed: %s", r.KVHeads, r.Backend, r.Error)
			}
		}
	}
	if cfg.Quick {
		for _, r := range slices.Concat(rep.Memory, rep.Checkpoint, rep.BlockGrad) {
			if r.Error != "" {
				return rep, fmt.Errorf("%s failed: %s", r.label(), r.Error)
			}
		}
	}
	return rep, nil
}
