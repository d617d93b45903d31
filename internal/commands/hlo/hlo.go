// Package hlo is `mhalab hlo`: what XLA makes of the multi-head self-attention graph — its
// StableHLO, its HLO, or the optimised HLO with fusions counted.
package hlo

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/big"

	"github.com/dustin/go-humanize"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/xla"
)

// Stages HLO shows.
const (
	StableHLO = "stablehlo" // the program GoMLX hands to XLA
	HLOStage  = "hlo"       // XLA's HLO before optimisation
	Optimized = "optimized" // XLA's HLO after optimisation (fusions)
)

// Config is the multi-head self-attention graph HLO shows: x [Batch, Seq, DModel], Heads
// heads, separate q/k/v projection weights or the fused in_proj_weight, causal or not.
type Config struct {
	Batch, Seq, DModel, Heads int
	Separate, Causal          bool
}

// Options are the flags of `mhalab hlo`.
type Options struct {
	Stage     string    // StableHLO, HLOStage or Optimized
	Stats     bool      // print only the op counts (and fusions)
	Backend   string    // xla:cpu or xla:cuda
	Devices   int       // ≥ 1: > 1 compiles head-parallel attention for that many devices (HLODevices)
	Given     cli.Given // whether --stage was given (with Devices > 1 the default is Optimized)
	MaxMemory uint64    // refuse sizes whose input and weights need more bytes than this
	Config
}

// Run checks the options, compiles the graph on the XLA backend and prints the stage (or its
// counts) on io.Out, the summary on io.Err.
func (o Options) Run(_ context.Context, io cli.IO) error {
	switch o.Stage {
	case StableHLO, HLOStage, Optimized:
	default:
		return cli.Usagef("--stage %q: want stablehlo, hlo or optimized", o.Stage)
	}
	if err := cli.CheckBackend(o.Backend); err != nil {
		return err
	}
	if o.Backend == xla.SpecGo {
		return cli.Usagef("--backend go: the pure-Go backend does not compile to HLO; use xla:cpu or xla:cuda")
	}
	if err := check(o.Config, o.MaxMemory); err != nil {
		return err
	}
	if o.Devices < 1 || o.Devices > xla.MaxDevices {
		return cli.Usagef("--devices %d: want 1 to %d", o.Devices, xla.MaxDevices)
	}
	if o.Devices > 1 && !o.Given["stage"] {
		o.Stage = Optimized // the partitioned program is XLA's, after its SPMD passes
	}
	if o.Devices > 1 && o.Stage == StableHLO {
		return cli.Usagef("--devices %d shows XLA's HLO of one device's program: use --stage hlo or --stage optimized", o.Devices)
	}
	if o.Devices > 1 && o.Heads%o.Devices != 0 {
		return cli.Usagef("--devices %d does not divide --heads %d: each device holds whole heads", o.Devices, o.Heads)
	}
	if o.Stage != StableHLO {
		// XLA reads $XLA_FLAGS once, when the process creates its first XLA client: before
		// the backend below.
		if err := xla.EnableHLODump(); err != nil {
			return err
		}
	}
	if o.Devices > 1 {
		backend, reason, err := xla.NewWithDevices(o.Backend, o.Devices)
		if err != nil {
			return err
		}
		defer backend.Finalize()
		fmt.Fprintf(io.Err, "mhalab hlo: backend %s\n", reason)
		return HLODevices(io.Out, io.Err, backend, o.Config, o.Devices, o.Stage, o.Stats)
	}
	backend, reason, err := cli.NewWithReason(o.Backend)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	fmt.Fprintf(io.Err, "mhalab hlo: backend %s\n", reason)
	return HLO(io.Out, io.Err, backend, o.Config, o.Stage, o.Stats)
}

// check returns an error, before anything is allocated, when the sizes of cfg are not
// positive, its heads do not divide d_model, the input and weights (all mhalab hlo allocates)
// need more than maxMemory bytes, or the graph's scores [B, h, L, L] would have more bytes than
// a size can count (int64).
func check(cfg Config, maxMemory uint64) error {
	if err := cli.CheckMHA(cfg.Batch, cfg.Seq, cfg.DModel, cfg.Heads, maxMemory); err != nil {
		return err
	}
	b, l, e, h := cfg.Batch, cfg.Seq, cfg.DModel, cfg.Heads
	subject := fmt.Sprintf("--batch %d --seq %d --dmodel %d --heads %d", b, l, e, h)
	if err := cli.CheckMemory(subject, "compiling the graph", maxMemory,
		cli.TensorNeed{What: "x", Count: 1, Dims: []int{b, l, e}}, cli.TensorNeed{What: "projection weights", Count: 4, Dims: []int{e, e}}); err != nil {
		return err
	}
	scores := cli.TensorNeed{What: "scores", Count: 1, Dims: []int{b, h, l, l}}
	if n := scores.Bytes(); n.Cmp(big.NewInt(math.MaxInt64)) > 0 {
		return fmt.Errorf("%s: the graph's float32 %s would hold %s, more than XLA can address (%s)",
			subject, scores, humanize.BigIBytes(n), humanize.IBytes(math.MaxInt64))
	}
	return nil
}

// mhaGraph returns the graph function of multi-head self-attention for cfg:
// x: [Batch, Seq, DModel] → [Batch, Seq, DModel].
func mhaGraph(cfg Config) func(ctx *mlctx.Context, x *graph.Node) *graph.Node {
	return func(ctx *mlctx.Context, x *graph.Node) *graph.Node {
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
func HLO(w, summary io.Writer, backend backends.Backend, cfg Config, stage string, stats bool) error {
	input := shapes.Make(dtypes.Float32, cfg.Batch, cfg.Seq, cfg.DModel)
	projections := "fused in_proj_weight"
	if cfg.Separate {
		projections = "separate q/k/v_proj_weight"
	}
	fmt.Fprintf(summary, "mhalab hlo: multi-head self-attention, x %s, %d heads, %s, causal %v\n", input, cfg.Heads, projections, cfg.Causal)
	ctx := mhalib.WithInit(mlctx.New(), mhalib.InitXavierUniform)
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
