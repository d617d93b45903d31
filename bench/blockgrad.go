package bench

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/train"
)

// One gradient step of a causal pre-LN block, with plain (HeadParallel) or Flash attention: the
// memory suite's "grad-plain" and "grad-flash" measurements (issue 29, goal 5). Each runs in a
// child process like the other memory measurements: peak RSS, the compile time of the gradient
// graph, the median time of a gradient step (loss and the gradients of the input and every
// variable) and of the forward pass alone (the loss), so that backward ≈ step − forward.
// Plain attention at a length whose scores exceed mhalib.MaxAttentionBytes is refused when the
// graph is built (the row's error says so).

// blockGradLengths are the sequence lengths of the block gradient measurements (B 1, E 512, h 8).
var blockGradLengths = []int{1024, 4096, 16384}

// blockGradRuns is how many timed runs (after the first, which compiles) each graph gets at
// L ≤ 4096 (one above).
const blockGradRuns = 3

// isBlockGrad reports whether kind is a block gradient measurement.
func isBlockGrad(kind string) bool { return kind == "grad-plain" || kind == "grad-flash" }

// blockGradConfigs lists the block gradient measurements of one backend.
func blockGradConfigs(spec string, quick bool) []memConfig {
	lengths, e, h := blockGradLengths, 512, 8
	if quick {
		lengths, e, h = []int{256}, 64, 4
	}
	var cfgs []memConfig
	for _, l := range lengths {
		for _, kind := range []string{"grad-plain", "grad-flash"} {
			cfgs = append(cfgs, memConfig{Backend: spec, Kind: kind, B: 1, L: l, H: h, D: e, N: 1})
		}
	}
	return cfgs
}

// measureBlockGrad runs one block gradient measurement (RunChild).
func measureBlockGrad(backend backends.Backend, cfg memConfig, res *memResult) error {
	formulation := mhalib.HeadParallel
	if cfg.Kind == "grad-flash" {
		formulation = mhalib.Flash
	}
	ctx := mlctx.New()
	ctx.SetParam(mlctx.ParamInitialSeed, int64(1))
	block := func(ctx *mlctx.Context, x *Node) *Node {
		y := mhalib.PreLNBlock(ctx, x, cfg.H).Causal(mhalib.CausalTopLeft).
			ConfigureAttention(func(m *mhalib.MHABuilder) { m.Formulation(formulation) }).Done()
		return ReduceAllMean(Square(y)) // the loss
	}
	step, err := mlctx.NewExec(backend, ctx, func(ctx *mlctx.Context, x *Node) []*Node {
		loss := block(ctx, x)
		_, grads := train.VariableGradients(ctx, loss)
		return append([]*Node{loss, Gradient(loss, x)[0]}, grads...)
	})
	if err != nil {
		return err
	}
	defer step.Finalize()
	forward, err := mlctx.NewExec(backend, ctx, block)
	if err != nil {
		return err
	}
	defer forward.Finalize()
	x := uniformTensor(1, cfg.B, cfg.L, cfg.D)
	res.BaseRSSKiB = procStatusKiB("VmRSS")

	// timed runs exec blockGradRuns+1 times and returns the time of the first run (which
	// compiles, and creates the variables) and the medians of the wall and CPU times of the others.
	timed := func(exec func() (float64, error)) (first, wall, cpu float64, err error) {
		var walls, cpus []float64
		runs := blockGradRuns
		if cfg.L > 4096 {
			runs = 1 // a step at L = 16384 takes long enough on its own
		}
		for i := 0; i <= runs; i++ {
			start, startCPU := time.Now(), processCPUMS()
			loss, err := exec()
			if err != nil {
				return 0, 0, 0, err
			}
			walls, cpus = append(walls, msSince(start)), append(cpus, processCPUMS()-startCPU)
			res.Loss = loss
			if i == 0 && res.RunPeakRSSKiB == 0 {
				resetPeakRSS() // what compiling needed is not the gradient step's memory
			}
		}
		return walls[0], median(walls[1:]), median(cpus[1:]), nil
	}
	run := func(e *mlctx.Exec) func() (float64, error) {
		return func() (float64, error) {
			out, err := e.Exec(x)
			if err != nil {
				return 0, err
			}
			return shapes.ConvertTo[float64](out[0].Value()), finalizeAll(out)
		}
	}
	first, wall, cpu, err := timed(run(step))
	if err != nil {
		return err
	}
	res.CompileMS, res.RunMS, res.StepCPUMS = first-wall, wall, cpu
	res.RunPeakRSSKiB = procStatusKiB("VmHWM") // after resetPeakRSS in timed: the runs' own peak
	if _, res.ForwardMS, res.ForwardCPUMS, err = timed(run(forward)); err != nil {
		return err
	}
	return nil
}

// resetPeakRSS resets the process's peak RSS (VmHWM) to its current RSS (Linux:
// /proc/self/clear_refs; elsewhere nothing happens).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// median returns the median of xs (the upper one of an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// printBlockGradTable prints the block gradient measurements, with the ratio of flash to plain
// at each length both ran. Times are wall / CPU (every thread) medians; backward is step − forward.
func printBlockGradTable(w io.Writer, rows []memResult) {
	fmt.Fprintln(w, "| backend | attention | L | peak RSS | compile | step, wall / CPU | forward | backward | flash ÷ plain, backward | flash ÷ plain, step | note |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	pair := func(wall, cpu float64) string { return FormatMS(wall) + " / " + FormatMS(cpu) }
	for _, r := range rows {
		peak, compile, stepMS, fwd, bwd, ratioB, ratio := "—", "—", "—", "—", "—", "", ""
		if r.Error == "" {
			peak = humanize.IBytes(uint64(r.PeakRSSKiB) * 1024)
			compile = FormatMS(r.CompileMS)
			stepMS, fwd = pair(r.RunMS, r.StepCPUMS), pair(r.ForwardMS, r.ForwardCPUMS)
			bwd = pair(r.RunMS-r.ForwardMS, r.StepCPUMS-r.ForwardCPUMS)
			if p := plainOf(rows, r); r.Kind == "grad-flash" && p != nil {
				rb := backwardRatios(r, *p)
				ratioB = fmt.Sprintf("%.2f× / %.2f×", rb[0], rb[1])
				ratio = fmt.Sprintf("%.2f× / %.2f×", r.RunMS/p.RunMS, r.StepCPUMS/p.StepCPUMS)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Backend, r.Kind[len("grad-"):], r.L,
			peak, compile, stepMS, fwd, bwd, ratioB, ratio, r.Error)
	}
}

// backwardRatios returns flash's backward time (step − forward) over plain's: wall, CPU.
func backwardRatios(flash, plain memResult) [2]float64 {
	return [2]float64{(flash.RunMS - flash.ForwardMS) / (plain.RunMS - plain.ForwardMS),
		(flash.StepCPUMS - flash.ForwardCPUMS) / (plain.StepCPUMS - plain.ForwardCPUMS)}
}

// plainOf returns the successful grad-plain measurement of r's backend and shape, or nil.
func plainOf(rows []memResult, r memResult) *memResult {
	for i, p := range rows {
		if p.Kind == "grad-plain" && p.Error == "" && p.Backend == r.Backend && p.L == r.L && p.B == r.B && p.D == r.D && p.H == r.H {
			return &rows[i]
		}
	}
	return nil
}

// blockGradGoals checks issue 29's goal 5 against the block gradient measurements: at the
// longest length flash fits where plain attention is refused, and where plain fits the flash
// backward pass takes at most 1.3× plain's.
func blockGradGoals(rows []memResult) []goalResult {
	var goals []goalResult
	longest := slices.Max(append([]int{0}, blockGradLengths...))
	for _, r := range rows {
		if r.Kind != "grad-flash" {
			continue
		}
		if p := plainOf(rows, r); p != nil && r.Error == "" {
			rb := backwardRatios(r, *p)
			goals = append(goals, goalResult{
				Goal: fmt.Sprintf("%s pre-LN block gradient, L = %d: flash backward ≤ 1.3× plain backward (step − forward, CPU time)", r.Backend, r.L),
				Measured: fmt.Sprintf("%.2f× CPU (%s vs %s); wall %.2f×; whole step %.2f× CPU", rb[1],
					FormatMS(r.StepCPUMS-r.ForwardCPUMS), FormatMS(p.StepCPUMS-p.ForwardCPUMS), rb[0], r.StepCPUMS/p.StepCPUMS),
				Met: rb[1] <= 1.3})
		}
		if r.L != longest {
			continue
		}
		var plain *memResult
		for i, p := range rows {
			if p.Kind == "grad-plain" && p.Backend == r.Backend && p.L == r.L {
				plain = &rows[i]
			}
		}
		if plain == nil {
			continue
		}
		flashNote := "failed: " + r.Error
		if r.Error == "" {
			flashNote = fmt.Sprintf("flash: %s peak RSS, step %s", humanize.IBytes(uint64(r.PeakRSSKiB)*1024), FormatMS(r.RunMS))
		}
		plainNote := "plain: ran (not refused)"
		refused := plain.Error != "" && strings.Contains(plain.Error, "attention scores too large")
		if refused {
			plainNote = "plain: refused up front"
		}
		goals = append(goals, goalResult{
			Goal:     fmt.Sprintf("%s pre-LN block gradient at L = %d, B%d E%d h%d: flash fits where plain attention is refused", r.Backend, r.L, r.B, r.D, r.H),
			Measured: flashNote + "; " + plainNote,
			Met:      r.Error == "" && refused})
	}
	return goals
}

// printMemComparison prints, for every memory measurement of cur also in old (same label),
// the peak RSS and run time then and now.
func printMemComparison(w io.Writer, old, cur *benchReport) {
	oldByLabel := map[string]memResult{}
	for _, r := range slices.Concat(old.Memory, old.Checkpoint, old.BlockGrad) {
		oldByLabel[r.label()] = r
	}
	rows := slices.Concat(cur.Memory, cur.Checkpoint, cur.BlockGrad)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Memory measurements compared\n\n")
	fmt.Fprintln(w, "| measurement | peak RSS then | peak RSS now | run then | run now | change |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	cell := func(r memResult, ok bool) (peak, run string) {
		switch {
		case !ok:
			return "not run", "—"
		case r.Error != "":
			return "error", "—"
		}
		return humanize.IBytes(uint64(r.PeakRSSKiB) * 1024), FormatMS(r.RunMS)
	}
	for _, r := range rows {
		o, ok := oldByLabel[r.label()]
		peakThen, runThen := cell(o, ok)
		peakNow, runNow := cell(r, true)
		change := "—"
		if ok && o.Error == "" && r.Error == "" {
			change = relChange(o.RunMS, r.RunMS)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.label(), peakThen, peakNow, runThen, runNow, change)
	}
}
