package mhacmd

import (
	"fmt"
	"io"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/xla"
)

// Stages HLO shows.
const (
	StableHLO = "stablehlo" // the program GoMLX hands to XLA
	HLOStage  = "hlo"       // XLA's HLO before optimisation
	Optimized = "optimized" // XLA's HLO after optimisation (fusions)
)

// HLOConfig is the multi-head self-attention graph HLO shows: x [Batch, Seq, DModel], Heads
// heads, separate q/k/v projection weights or the fused in_proj_weight, causal or not.
type HLOConfig struct {
	Batch, Seq, DModel, Heads int
	Separate, Causal          bool
}

// mhaGraph returns the graph function of multi-head self-attention for cfg:
// x: [Batch, Seq, DModel] → [Batch, Seq, DModel].
func mhaGraph(cfg HLOConfig) func(ctx *context.Context, x *graph.Node) *graph.Node {
	return func(ctx *context.Context, x *graph.Node) *graph.Node {
		b := mhalib.MultiHeadAttention(ctx, x, x, x, cfg.Heads).SeparateProjections(cfg.Separate)
		if cfg.Causal {
			b = b.Causal(mhalib.CausalTopLeft)
		}
		return b.Done()
	}
}

// HLO compiles the graph of cfg on an XLA backend and writes the text of stage (StableHLO,
// HLO or Optimized), or only its op counts when stats, to w, and a summary to summary. The HLO
// stages need xla.EnableHLODump before the process's first XLA backend.
func HLO(w, summary io.Writer, backend backends.Backend, cfg HLOConfig, stage string, stats bool) error {
	input := shapes.Make(dtypes.Float32, cfg.Batch, cfg.Seq, cfg.DModel)
	projections := "fused in_proj_weight"
	if cfg.Separate {
		projections = "separate q/k/v_proj_weight"
	}
	fmt.Fprintf(summary, "mhalab hlo: multi-head self-attention, x %s, %d heads, %s, causal %v\n", input, cfg.Heads, projections, cfg.Causal)
	ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
	var text, counts string
	if stage == StableHLO {
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
		if stage == HLOStage {
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
