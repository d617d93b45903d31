// Package bench is `mhalab bench`: MHA timed on every backend and PyTorch side by side, KV-cache
// decoding, peak memory of flash vs plain attention and of checkpointing (package bench measures
// and reports; this package checks the flags and starts it).
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/mhalab/mhalab/bench"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/xla"
)

// Options are the flags of `mhalab bench`: bench.Config plus its lists as given (comma-separated).
type Options struct {
	bench.Config
	Backends, Suites, Groups, Pythons string // comma-separated lists
	NoProgress                        bool   // no progress bar even on a terminal
	// Child, when set, is one memory measurement (JSON) to run in this process, the child side
	// of Config.ChildCommand.
	Child string
	// Self is the command line that runs this command again (Config.ChildCommand without
	// --child); nil: this executable and "bench".
	Self []string
}

// Run checks the flags, refuses a --json file that is one of the inputs, and runs the bench:
// the report on io.Out, progress on io.Err. ctx stops it after the measurement under way.
func (o Options) Run(ctx context.Context, io cli.IO) error {
	if o.Child != "" {
		if err := bench.RunChild(o.Child, io.Out); err != nil {
			return fmt.Errorf("--child: %w", err)
		}
		return nil
	}
	cfg := o.Config
	cfg.Suites = bench.SplitList(o.Suites)
	cfg.Backends = bench.SplitList(o.Backends)
	cfg.Groups = bench.SplitList(o.Groups)
	for _, g := range cfg.Groups {
		if !slices.Contains(bench.Groups(), g) {
			return cli.Usagef("--groups: unknown group %q (valid: %s)", g, strings.Join(bench.Groups(), ", "))
		}
	}
	cfg.Pythons = bench.SplitList(o.Pythons)
	for _, s := range cfg.Suites {
		if !slices.Contains(bench.Suites(), s) {
			return cli.Usagef("--suites: unknown suite %q (valid: %s)", s, strings.Join(bench.Suites(), ", "))
		}
	}
	for _, b := range cfg.Backends {
		if err := xla.CheckSpec(b); err != nil && b != bench.GoWithoutFastGo {
			return cli.Usagef("--backends: %v", err)
		}
	}
	if cfg.TorchDevice != "cpu" && cfg.TorchDevice != "cuda" {
		return cli.Usagef("--torch-device %q: want cpu or cuda", cfg.TorchDevice)
	}
	if cfg.Threads < 1 {
		return fmt.Errorf("--threads %d: want at least 1", cfg.Threads)
	}
	if cfg.Devices < 0 || cfg.Devices > xla.MaxDevices {
		return cli.Usagef("--devices %d: want 1 to %d (0: the backend's own count)", cfg.Devices, xla.MaxDevices)
	}
	if cfg.Budget < 0 || cfg.MemTimeout <= 0 {
		return fmt.Errorf("--budget %s --mem-timeout %s: want positive durations", cfg.Budget, cfg.MemTimeout)
	}
	inputs := []cli.FileArg{{Flag: "--compare", Path: cfg.ComparePath}, {Flag: "--torch-script", Path: cfg.TorchScript}}
	if cfg.LlamaPython != "" {
		inputs = append(inputs, cli.FileArg{Flag: "--llama-python", Path: cfg.LlamaPython})
	}
	for _, py := range cfg.Pythons {
		inputs = append(inputs, cli.FileArg{Flag: "--python", Path: py})
	}
	if err := cli.CheckOutput(cli.FileArg{Flag: "--json", Path: cfg.JSONPath}, false, inputs...); err != nil {
		return err
	}
	self := o.Self
	if self == nil {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this executable to run the memory measurements: %w", err)
		}
		self = []string{exe, "bench"}
	}
	cfg.ChildCommand = append(slices.Clone(self), "--child")
	cfg.Progress = !o.NoProgress && isTerminal(io.Err)
	return bench.Run(ctx, io.Out, io.Err, cfg)
}

// isTerminal reports whether w is a terminal (a file such as /dev/null is not).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
