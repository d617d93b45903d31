package main

import (
	"fmt"
	"io"
	"math"
	"math/big"

	"github.com/dustin/go-humanize"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/xla"
)

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

func runHLO(c command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
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
	maxMemory := addMaxMemoryFlag(fs, "the input and the weights (the graph is compiled, not run)")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	switch *stage {
	case stageStableHLO, stageHLO, stageOptimized:
	default:
		return usagef("--stage %q: want stablehlo, hlo or optimized", *stage)
	}
	if err := xla.CheckSpec(*spec); err != nil {
		return &usageError{err.Error()}
	}
	if *spec == xla.SpecGo {
		return usagef("--backend go: the pure-Go backend does not compile to HLO; use xla:cpu or xla:cuda")
	}
	if err := cfg.check(uint64(*maxMemory)); err != nil {
		return err
	}
	if *stage != stageStableHLO {
		// XLA reads $XLA_FLAGS once, when the process creates its first XLA client: before
		// the backend below.
		if err := xla.EnableHLODump(); err != nil {
			return err
		}
	}
	backend, reason, err := xla.NewWithReason(*spec)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	fmt.Fprintf(stderr, "mhalab hlo: backend %s\n", reason)
	return printHLO(stdout, stderr, backend, cfg, *stage, *stats)
}

// check returns an error, before anything is allocated, when the sizes of cfg are not
// positive, its heads do not divide d_model, the input and weights (all mhalab hlo allocates)
// need more than maxMemory bytes, or the graph's scores [B, h, L, L] would have more bytes than
// a size can count (int64).
func (cfg hloConfig) check(maxMemory uint64) error {
	if err := checkSizes(sizeFlag{"batch", cfg.batch}, sizeFlag{"seq", cfg.seq},
		sizeFlag{"dmodel", cfg.dModel}, sizeFlag{"heads", cfg.heads}); err != nil {
		return err
	}
	if err := checkHeads("heads", cfg.heads, "dmodel", cfg.dModel); err != nil {
		return err
	}
	if maxMemory == 0 {
		return fmt.Errorf("--max-memory 0: want a positive size")
	}
	b, l, e, h := cfg.batch, cfg.seq, cfg.dModel, cfg.heads
	subject := fmt.Sprintf("--batch %d --seq %d --dmodel %d --heads %d", b, l, e, h)
	if err := checkMemory(subject, "compiling the graph", maxMemory,
		tensorNeed{"x", 1, []int{b, l, e}}, tensorNeed{"projection weights", 4, []int{e, e}}); err != nil {
		return err
	}
	scores := tensorNeed{"scores", 1, []int{b, h, l, l}}
	if n := scores.bytes(); n.Cmp(big.NewInt(math.MaxInt64)) > 0 {
		return fmt.Errorf("%s: the graph's float32 %s would hold %s, more than XLA can address (%s)",
			subject, scores, humanize.BigIBytes(n), humanize.IBytes(math.MaxInt64))
	}
	return nil
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
