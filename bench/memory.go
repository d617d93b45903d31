package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/train"
	"github.com/mhalab/mhalab/xla"
)

// Peak memory is measured one configuration per process: Run starts Config.ChildCommand with
// a JSON description (mhalab: `mhalab bench --child JSON`), the child (RunChild) builds and runs one graph and prints its peak
// resident set size (VmHWM of /proc/self/status) as one JSON line. A configuration that cannot
// run gives a clear error in the table: plain attention refused up front from the shapes
// (mhalib.MemoryError), or the child killed by the kernel (out of memory) or by the time limit.

// memConfig describes one measurement.
type memConfig struct {
	Backend string `json:"backend"`
	Kind    string `json:"kind"` // "plain", "flash": one attention forward; "ckpt", "autodiff": stack gradients
	B       int    `json:"b"`
	L       int    `json:"l"`
	H       int    `json:"h"`
	D       int    `json:"d"` // head dim (attention) or embed dim (stack)
	N       int    `json:"n"` // blocks (stack)
}

func (m memConfig) label() string {
	if isBlockGrad(m.Kind) {
		return fmt.Sprintf("%s memory: pre-LN block gradient, %s attention, B%d L%d E%d h%d", m.Backend, m.Kind[len("grad-"):], m.B, m.L, m.D, m.H)
	}
	if m.Kind == "ckpt" || m.Kind == "autodiff" {
		return fmt.Sprintf("%s memory: %s, %d blocks, B%d L%d E%d h%d", m.Backend, m.Kind, m.N, m.B, m.L, m.D, m.H)
	}
	return fmt.Sprintf("%s memory: %s attention L=%d", m.Backend, m.Kind, m.L)
}

type memResult struct {
	memConfig
	PeakRSSKiB int64   `json:"peak_rss_kib"`
	BaseRSSKiB int64   `json:"base_rss_kib"` // after creating the backend and the inputs
	CompileMS  float64 `json:"compile_ms"`
	RunMS      float64 `json:"run_ms"`
	ForwardMS  float64 `json:"forward_ms,omitempty"` // block gradients: the forward pass alone
	// Block gradients: CPU time (every thread) of a gradient step and of the forward pass.
	StepCPUMS float64 `json:"step_cpu_ms,omitempty"`
	// Block gradients: the peak RSS of the timed gradient steps alone (the first step, which
	// compiles, left out), where the system can reset the peak (Linux); 0 elsewhere.
	RunPeakRSSKiB int64   `json:"run_peak_rss_kib,omitempty"`
	ForwardCPUMS  float64 `json:"forward_cpu_ms,omitempty"`
	Loss          float64 `json:"loss,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// memoryConfigs lists the measurements of the memory and checkpoint suites for the backends.
// Memory is host RSS, meaningful for CPU backends only.
func memoryConfigs(quick bool, specs []string, memory, checkpoint bool) []memConfig {
	var cfgs []memConfig
	lengths := []int{1024, 4096, 16384, 32768}
	stack := memConfig{B: 2, L: 1024, H: 8, D: 512, N: 8}
	if quick {
		lengths = []int{512}
		stack = memConfig{B: 1, L: 64, H: 4, D: 64, N: 2}
	}
	for _, spec := range specs {
		if spec == xla.SpecCUDA {
			continue
		}
		if memory {
			for _, l := range lengths {
				for _, kind := range []string{"plain", "flash"} {
					cfgs = append(cfgs, memConfig{Backend: spec, Kind: kind, B: 1, L: l, H: 8, D: 64})
				}
			}
			cfgs = append(cfgs, blockGradConfigs(spec, quick)...)
		}
		if checkpoint {
			for _, kind := range []string{"autodiff", "ckpt"} {
				c := stack
				c.Backend, c.Kind = spec, kind
				cfgs = append(cfgs, c)
			}
		}
	}
	return cfgs
}

// runMemMeasurement runs cfg in a child process: child is the command line that calls
// RunChild, cfg's JSON is appended to it. The child is killed after timeout, or when parent
// ends (Ctrl-C).
func runMemMeasurement(parent context.Context, cfg memConfig, timeout time.Duration, child []string) memResult {
	res := memResult{memConfig: cfg}
	spec, err := json.Marshal(cfg)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, child[0], append(slices.Clone(child[1:]), string(spec))...)
	cmd.WaitDelay = time.Second // once it is killed, stop waiting for what it started to close its output
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	if line := lastJSONLine(out.String()); line != "" {
		if err := json.Unmarshal([]byte(line), &res); err == nil && runErr == nil {
			res.memConfig = cfg
			return res
		}
	}
	var exitErr *exec.ExitError
	switch {
	case parent.Err() != nil:
		res.Error = "stopped: " + parent.Err().Error()
	case ctx.Err() != nil:
		res.Error = fmt.Sprintf("killed after the time limit %s", timeout)
	case errors.As(runErr, &exitErr) && exitErr.ProcessState != nil && strings.Contains(exitErr.ProcessState.String(), "killed"):
		res.Error = "killed by the kernel (" + exitErr.ProcessState.String() + "): out of memory"
	case runErr != nil:
		res.Error = fmt.Sprintf("%v: %s", runErr, childFailure(errOut.String()))
	default:
		res.Error = "no result from the child process: " + lastLines(out.String()+errOut.String(), 3)
	}
	return res
}

// childFailure returns what a child process that failed wrote on stderr, in one line: the Go
// runtime's first "fatal error: …" or "panic: …" line, with the "runtime: …" line right before
// it (a child out of memory writes "runtime: out of memory: cannot allocate 4194304-byte block
// (683114496 in use)", "fatal error: out of memory" and then hundreds of lines of goroutine
// stacks, whose last lines say nothing), else its last 3 lines.
func childFailure(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "fatal error: ") || strings.HasPrefix(line, "panic: ") {
			if i > 0 && strings.HasPrefix(lines[i-1], "runtime: ") {
				return lines[i-1] + " | " + line
			}
			return line
		}
	}
	return lastLines(stderr, 3)
}

func lastJSONLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "{") {
			return lines[i]
		}
	}
	return ""
}

// RunChild is the child side of a memory measurement (see Config.ChildCommand): it runs the
// measurement that spec (JSON written by Run) describes and prints the result to stdout as one
// JSON line. Measurement failures (a refusal, an XLA error) are part of the result; only an
// unreadable spec is an error.
func RunChild(spec string, stdout io.Writer) error {
	var cfg memConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		return fmt.Errorf("bench: memory measurement %q: %w", spec, err)
	}
	res := memResult{memConfig: cfg}
	if err := measure(cfg, &res); err != nil {
		res.Error = err.Error()
	}
	res.PeakRSSKiB = procStatusKiB("VmHWM")
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(data))
	return nil
}

func measure(cfg memConfig, res *memResult) error {
	backend, err := xla.New(cfg.Backend)
	if err != nil {
		return err
	}
	defer xla.Close(backend)
	switch cfg.Kind {
	case "plain", "flash":
		return measureAttention(backend, cfg, res)
	case "ckpt", "autodiff":
		return measureStack(backend, cfg, res)
	case "grad-plain", "grad-flash":
		return measureBlockGrad(backend, cfg, res)
	}
	return fmt.Errorf("unknown kind %q", cfg.Kind)
}

func measureAttention(backend backends.Backend, cfg memConfig, res *memResult) error {
	// Inputs made on the backend itself (smooth pseudo-random values from an iota), so that no
	// Go-side copy adds to the resident memory.
	dims := []int{cfg.B, cfg.H, cfg.L, cfg.D}
	gen, err := NewExec(backend, func(g *Graph) (q, k, v *Node) {
		x := Iota(g, shapes.Make(dtypes.Float32, dims...), 2)
		y := Iota(g, shapes.Make(dtypes.Float32, dims...), 3)
		q = Sin(Add(MulScalar(x, 0.37), MulScalar(y, 1.3)))
		k = Cos(Add(MulScalar(x, 0.11), MulScalar(y, 0.7)))
		v = Sin(Add(MulScalar(x, 0.05), MulScalar(y, 2.1)))
		return
	})
	if err != nil {
		return err
	}
	inputs, err := gen.Exec()
	gen.Finalize()
	if err != nil {
		return err
	}
	res.BaseRSSKiB = procStatusKiB("VmRSS")
	exec, err := NewExec(backend, func(q, k, v *Node) *Node {
		if cfg.Kind == "flash" {
			return mhalib.FlashAttention(q, k, v).Done()
		}
		return mhalib.ScaledDotProductAttention(q, k, v).Done()
	})
	if err != nil {
		return err
	}
	defer exec.Finalize()
	start := time.Now()
	if err := exec.PreCompile(inputs[0], inputs[1], inputs[2]); err != nil {
		return err
	}
	res.CompileMS = msSince(start)
	start = time.Now()
	out, err := exec.Exec(inputs[0], inputs[1], inputs[2])
	if err != nil {
		return err
	}
	res.RunMS = msSince(start)
	return finalizeAll(out)
}

func measureStack(backend backends.Backend, cfg memConfig, res *memResult) error {
	ctx := mlctx.New()
	ctx.SetParam(mlctx.ParamInitialSeed, int64(1))
	block := func(ctx *mlctx.Context, x *Node) *Node {
		return mhalib.PreLNBlock(ctx, x, cfg.H).Causal(mhalib.CausalTopLeft).Done()
	}
	loss := func(ctx *mlctx.Context, y *Node) *Node { return ReduceAllMean(Square(y)) }
	stack, err := train.NewCheckpointStack(backend, ctx, cfg.N, block, loss)
	if err != nil {
		return err
	}
	defer stack.Finalize()
	x := uniformTensor(1, cfg.B, cfg.L, cfg.D)
	res.BaseRSSKiB = procStatusKiB("VmRSS")
	start := time.Now()
	var g *train.StackGradients
	if cfg.Kind == "ckpt" {
		g, err = stack.Gradients(x)
	} else {
		g, err = stack.GradientsAutodiff(x)
	}
	if err != nil {
		return err
	}
	res.RunMS = msSince(start) // compilation included: the graphs are built on first use
	res.Loss = g.Loss
	for _, t := range g.Variables {
		if err := t.FinalizeAll(); err != nil {
			return err
		}
	}
	return nil
}

// procStatusKiB reads a "Vm…: N kB" line of /proc/self/status (0 if unavailable).
func procStatusKiB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, field+":") {
			fields := strings.Fields(line)
			if len(fields) >= 2 {
				n, _ := strconv.ParseInt(fields[1], 10, 64)
				return n
			}
		}
	}
	return 0
}

func printMemTable(w io.Writer, rows []memResult) {
	fmt.Fprintln(w, "| backend | configuration | peak RSS | RSS before the graph | compile | run | note |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---|")
	for _, r := range rows {
		what := fmt.Sprintf("%s attention, L = %d", r.Kind, r.L)
		if r.Kind == "ckpt" || r.Kind == "autodiff" {
			name := map[string]string{"ckpt": "checkpointed", "autodiff": "plain autodiff"}[r.Kind]
			what = fmt.Sprintf("%s, %d blocks, B%d L%d E%d h%d", name, r.N, r.B, r.L, r.D, r.H)
		}
		note := ""
		if r.Error != "" {
			note = r.Error
		} else if r.Loss != 0 {
			note = fmt.Sprintf("loss %.6g", r.Loss)
		}
		peak, base := "—", "—"
		if r.PeakRSSKiB > 0 {
			peak = humanize.IBytes(uint64(r.PeakRSSKiB) * 1024)
		}
		if r.BaseRSSKiB > 0 {
			base = humanize.IBytes(uint64(r.BaseRSSKiB) * 1024)
		}
		compile := "—"
		if r.CompileMS > 0 {
			compile = FormatMS(r.CompileMS)
		}
		run := "—"
		if r.RunMS > 0 {
			run = FormatMS(r.RunMS)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Backend, what, peak, base, compile, run, note)
	}
}
