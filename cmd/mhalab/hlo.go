package main

import (
	"fmt"
	"io"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/xla"
)

var hloCmd = command{
	name:    "hlo",
	args:    "[--stage stablehlo|hlo|optimized] [--stats] [--backend B] [--batch B] [--seq L] [--dmodel E] [--heads H] [--separate] [--causal]",
	summary: "print what XLA makes of the multi-head self-attention graph: its StableHLO, its HLO, or the optimised HLO with fusions counted",
}

func init() {
	hloCmd.run = runHLOCmd
	register(hloCmd)
}

// Stages of --stage.
const (
	stageStableHLO = "stablehlo" // the program GoMLX hands to XLA
	stageHLO       = "hlo"       // XLA's HLO before optimisation
	stageOptimized = "optimized" // XLA's HLO after optimisation (fusions)
)

// hloConfig is the MHA graph mhalab hlo shows.
type hloConfig struct {
	batch, seq, dModel, heads int
	separate, causal          bool
}

func runHLOCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(hloCmd.name)
	stage := fs.String("stage", stageStableHLO, "what to print: stablehlo (GoMLX's program), hlo (XLA's HLO before optimisation) or optimized (after optimisation)")
	stats := fs.Bool("stats", false, "print only the op counts (and fusions), not the text")
	spec := fs.String("backend", xla.SpecCPU, "XLA backend to compile with: xla:cpu or xla:cuda (the pure-Go backend has no HLO)")
	cfg := hloConfig{}
	fs.IntVar(&cfg.batch, "batch", 2, "batch size B")
	fs.IntVar(&cfg.seq, "seq", 8, "sequence length L")
	fs.IntVar(&cfg.dModel, "dmodel", 32, "model (embedding) dimension E")
	fs.IntVar(&cfg.heads, "heads", 4, "number of heads h (must divide E)")
	fs.BoolVar(&cfg.separate, "separate", false, "separate q/k/v projection weights instead of the fused in_proj_weight")
	fs.BoolVar(&cfg.causal, "causal", false, "causal mask (key j ≤ query i)")
	if err := parseFlags(fs, hloCmd, args, stdout); err != nil {
		return err
	}
	switch *stage {
	case stageStableHLO, stageHLO, stageOptimized:
	default:
		return &usageError{fmt.Sprintf("--stage %q: want stablehlo, hlo or optimized", *stage)}
	}
	if err := xla.CheckSpec(*spec); err != nil {
		return &usageError{err.Error()}
	}
	if *spec == xla.SpecGo {
		return &usageError{"--backend go: the pure-Go backend does not compile to HLO; use xla:cpu or xla:cuda"}
	}
	switch {
	case cfg.batch < 1 || cfg.seq < 1 || cfg.dModel < 1 || cfg.heads < 1:
		return &usageError{fmt.Sprintf("--batch %d --seq %d --dmodel %d --heads %d: all must be positive", cfg.batch, cfg.seq, cfg.dModel, cfg.heads)}
	case cfg.dModel%cfg.heads != 0:
		return &usageError{fmt.Sprintf("--heads %d does not divide --dmodel %d", cfg.heads, cfg.dModel)}
	}
	backend, reason, err := xla.NewWithReason(*spec)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	fmt.Fprintf(stderr, "mhalab hlo: backend %s\n", reason)
	return printHLO(stdout, stderr, backend, cfg, *stage, *stats)
}

// mhaGraph returns the graph function of multi-head self-attention for cfg:
// x: [batch, seq, dModel] → [batch, seq, dModel].
func mhaGraph(cfg hloConfig) func(ctx *context.Context, x *Node) *Node {
	return func(ctx *context.Context, x *Node) *Node {
		b := mhalib.MultiHeadAttention(ctx, x, x, x, cfg.heads).SeparateProjections(cfg.separate)
		if cfg.causal {
			b = b.Causal(mhalib.CausalTopLeft)
		}
		return b.Done()
	}
}

// printHLO writes the text of stage (or only its op counts when stats) to w and a summary to
// summary.
func printHLO(w, summary io.Writer, backend backends.Backend, cfg hloConfig, stage string, stats bool) error {
	input := shapes.Make(dtypes.Float32, cfg.batch, cfg.seq, cfg.dModel)
	projections := "fused in_proj_weight"
	if cfg.separate {
		projections = "separate q/k/v_proj_weight"
	}
	fmt.Fprintf(summary, "mhalab hlo: multi-head self-attention, x %s, %d heads, %s, causal %v\n", input, cfg.heads, projections, cfg.causal)
	ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
	var text, counts string
	if stage == stageStableHLO {
		program, err := xla.StableHLO(backend, ctx, mhaGraph(cfg), input)
		if err != nil {
			return err
		}
		ops := xla.StableHLOOps(program)
		text = program
		counts = fmt.Sprintf("StableHLO: %d ops (%s)", xla.TotalOps(ops), xla.FormatOps(ops))
	} else {
		dump, err := xla.OptimizedHLO(backend, ctx, mhaGraph(cfg), input)
		if err != nil {
			return err
		}
		before, after := xla.EntryOps(dump.Before), xla.EntryOps(dump.After)
		skip := []string{"parameter", "constant"}
		counts = fmt.Sprintf("HLO before optimisation: %d ops in ENTRY (%s)\nHLO after optimisation:  %d ops in ENTRY, %d fusions (%s)",
			xla.TotalOps(before, skip...), xla.FormatOps(before), xla.TotalOps(after, skip...), dump.Fusions, xla.FormatOps(after))
		text = dump.After
		if stage == stageHLO {
			text = dump.Before
		}
	}
	if stats {
		fmt.Fprintln(w, counts)
		return nil
	}
	fmt.Fprint(w, text)
	fmt.Fprintln(summary, counts)
	return nil
}
