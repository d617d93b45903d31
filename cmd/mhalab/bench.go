package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/mhalab/mhalab/bench"
	"github.com/mhalab/mhalab/xla"
)

func runBench(c command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
	cfg := bench.Config{}
	fs.BoolVar(&cfg.Quick, "quick", false, "small shapes and few runs (CI smoke test, well under a minute)")
	backends := fs.String("backends", "", "comma-separated backends (default: every available one of go, xla:cpu, xla:cuda; go-gomlx: go with fastgo off)")
	suites := fs.String("suites", strings.Join(bench.Suites, ","), "comma-separated suites: "+strings.Join(bench.Suites, ", "))
	groups := fs.String("groups", "", "comma-separated groups of forward-pass cases to run: "+strings.Join(bench.Groups, ", ")+" (default: all)")
	fs.StringVar(&cfg.JSONPath, "json", filepath.Join("build", "bench", "bench.json"), "write the results as JSON to this file")
	fs.StringVar(&cfg.ComparePath, "compare", "", "JSON report of a previous run (its --json file): print, per case, the change of the median and of the ratio to PyTorch")
	pythons := fs.String("python", "", "Pythons with PyTorch, comma-separated, each timed (default: $MHALAB_TORCH_VENV/bin/python, the venv of scripts/setup.sh, else python3)")
	fs.StringVar(&cfg.TorchDevice, "torch-device", "cpu", "device PyTorch runs on: cpu, or cuda (next to xla:cuda)")
	fs.StringVar(&cfg.TorchScript, "torch-script", "", "path of parity/bench_torch.py (default: found from the working directory)")
	fs.IntVar(&cfg.Threads, "threads", runtime.NumCPU(), "PyTorch threads (Go and XLA use every core; keep equal to the core count for a fair comparison)")
	fs.DurationVar(&cfg.Budget, "budget", 0, "time budget per case and backend for the timed runs (default 30s, --quick 3s); at least 3 runs")
	fs.DurationVar(&cfg.MemTimeout, "mem-timeout", 20*time.Minute, "time limit of each memory measurement process")
	fs.IntVar(&cfg.Devices, "devices", 0, "devices suite: largest device count (1, 2, 4, … up to it); xla:cpu makes that many virtual devices (default: the backend's count, 4 for xla:cpu)")
	noProgress := fs.Bool("no-progress", false, "no progress bar (it is shown only when stderr is a terminal)")
	child := fs.String("child", "", "internal: run one memory measurement described by this JSON and print its result")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if *child != "" {
		if err := bench.RunChild(*child, stdout); err != nil {
			return fmt.Errorf("--child: %w", err)
		}
		return nil
	}
	cfg.Suites = bench.SplitList(*suites)
	cfg.Backends = bench.SplitList(*backends)
	cfg.Groups = bench.SplitList(*groups)
	for _, g := range cfg.Groups {
		if !slices.Contains(bench.Groups, g) {
			return usagef("--groups: unknown group %q (valid: %s)", g, strings.Join(bench.Groups, ", "))
		}
	}
	cfg.Pythons = bench.SplitList(*pythons)
	for _, s := range cfg.Suites {
		if !slices.Contains(bench.Suites, s) {
			return usagef("--suites: unknown suite %q (valid: %s)", s, strings.Join(bench.Suites, ", "))
		}
	}
	for _, b := range cfg.Backends {
		if err := xla.CheckSpec(b); err != nil && b != bench.GoWithoutFastGo {
			return usagef("--backends: %v", err)
		}
	}
	if cfg.TorchDevice != "cpu" && cfg.TorchDevice != "cuda" {
		return usagef("--torch-device %q: want cpu or cuda", cfg.TorchDevice)
	}
	if cfg.Threads < 1 {
		return fmt.Errorf("--threads %d: want at least 1", cfg.Threads)
	}
	if cfg.Devices < 0 || cfg.Devices > xla.MaxDevices {
		return usagef("--devices %d: want 1 to %d (0: the backend's own count)", cfg.Devices, xla.MaxDevices)
	}
	if cfg.Budget < 0 || cfg.MemTimeout <= 0 {
		return fmt.Errorf("--budget %s --mem-timeout %s: want positive durations", cfg.Budget, cfg.MemTimeout)
	}
	inputs := []fileArg{{"--compare", cfg.ComparePath}, {"--torch-script", cfg.TorchScript}}
	for _, py := range cfg.Pythons {
		inputs = append(inputs, fileArg{"--python", py})
	}
	if err := checkOutput(fileArg{"--json", cfg.JSONPath}, false, inputs...); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this executable to run the memory measurements: %w", err)
	}
	cfg.ChildCommand = []string{self, c.name, "--child"}
	cfg.Progress = !*noProgress && isTerminal(stderr)
	return bench.Run(stdout, stderr, cfg)
}

// isTerminal reports whether w is a terminal (a file such as /dev/null is not).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
