package hlo

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/distributed"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/parallel"
	"github.com/mhalab/mhalab/xla"
)

// HLODevices compiles the head-parallel multi-head self-attention of cfg (no biases) for
// devices devices twice — the explicit SPMD program of mhalib/parallel.HeadParallel (one
// all-reduce) and the single-device program with the weights sharded by heads under
// AutoSharding — and writes one device's HLO of the explicit program (stage HLOStage or
// Optimized; only the op counts when stats) to w, and to summary the collectives of both next
// to the bytes computed from shapes. It needs xla.EnableHLODump before the first XLA backend.
func HLODevices(w, summary io.Writer, backend backends.Backend, cfg Config, devices int, stage string, stats bool) error {
	if stage == StableHLO {
		return fmt.Errorf("--devices %d shows XLA's HLO of one device's program: use --stage hlo or --stage optimized", devices)
	}
	if cfg.Heads%devices != 0 {
		return fmt.Errorf("--devices %d does not divide --heads %d: each device holds whole heads", devices, cfg.Heads)
	}
	if have := backend.NumDevices(); have < devices {
		return fmt.Errorf("--devices %d: backend has %d device(s)", devices, have)
	}
	mesh, err := parallel.Mesh(devices)
	if err != nil {
		return err
	}
	B, L, E, h := cfg.Batch, cfg.Seq, cfg.DModel, cfg.Heads
	local, rows := h/devices, E/devices
	causal := mhalib.NoCausal
	if cfg.Causal {
		causal = mhalib.CausalTopLeft
	}
	f32 := func(dims ...int) shapes.Shape { return shapes.Make(dtypes.Float32, dims...) }
	inputs := []shapes.Shape{f32(B, L, E), f32(rows, E), f32(rows, E), f32(rows, E), f32(E, rows)}
	fn := func(heads int) func(ctx *context.Context, in []*graph.Node) *graph.Node {
		return func(_ *context.Context, in []*graph.Node) *graph.Node {
			y, _ := parallel.HeadParallel(in[0], parallel.HeadWeights{Wq: in[1], Wk: in[2], Wv: in[3], Wo: in[4]}, heads, causal)
			return y
		}
	}
	fmt.Fprintf(summary, "mhalab hlo: head-parallel multi-head self-attention on %d devices, x %s, %d heads (%d per device), no biases, causal %v\n",
		devices, inputs[0], h, local, cfg.Causal)
	explicit, err := xla.OptimizedHLOFor(backend, nil, fn(local), &xla.Distribution{Mesh: mesh}, inputs...)
	if err != nil {
		return err
	}
	spec := func(c parallel.Cut) *distributed.ShardingSpec {
		s, err := c.Spec(mesh)
		if err != nil {
			panic(err) // the cuts above are valid by construction
		}
		return s
	}
	rowCut, colCut := spec(parallel.Cut{Rank: 2, Axis: 0}), spec(parallel.Cut{Rank: 2, Axis: 1})
	auto, err := xla.OptimizedHLOFor(backend, nil, fn(h), &xla.Distribution{Mesh: mesh, Auto: true,
		InputSpecs: []*distributed.ShardingSpec{nil, rowCut, rowCut, rowCut, colCut}}, inputs...)
	if err != nil {
		return err
	}
	computed := parallel.HeadParallelMessages(B, L, E, 4, false)
	tw := tabwriter.NewWriter(summary, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROGRAM\tCOLLECTIVE\tRESULT\tBYTES")
	for _, m := range computed {
		fmt.Fprintf(tw, "computed from shapes\tall-reduce %s\t%v\t%d\n", m.Op, m.Dims, m.Bytes)
	}
	for _, p := range []struct {
		name string
		dump *xla.HLODump
	}{{"explicit SPMD (read)", explicit}, {"AutoSharding (read)", auto}} {
		cs := xla.Collectives(p.dump.After)
		if len(cs) == 0 {
			fmt.Fprintf(tw, "%s\tnone\t\t0\n", p.name)
		}
		for _, c := range cs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", p.name, c.Op, c.Shape, c.Bytes)
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(summary, "a ring all-reduce of %d B sends %d B from each of %d devices\n",
		parallel.TotalBytes(computed), parallel.RingBytes(parallel.TotalBytes(computed), devices), devices)
	after := xla.EntryOps(explicit.After)
	counts := fmt.Sprintf("HLO after optimisation (one device, explicit SPMD): %d ops in ENTRY, %d fusions (%s)",
		xla.TotalOps(after, "parameter", "constant"), explicit.Fusions, xla.FormatOps(after))
	if stats {
		fmt.Fprintln(w, counts)
		return nil
	}
	text := explicit.After
	if stage == HLOStage {
		text = explicit.Before
	}
	fmt.Fprint(w, text)
	fmt.Fprintln(summary, counts)
	return nil
}
