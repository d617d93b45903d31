// Package demo is `mhalab demo`: one multi-head self-attention forward pass with Xavier-uniform
// weights, its attention rows checked to sum to 1, compilation and runs timed.
package demo

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/bench"
	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/inspect"
)

// Options are the flags of `mhalab demo`.
type Options struct {
	Backend   string // "" = the default backend (xla.NewWithReason)
	MaxMemory uint64 // refuse sizes whose tensors need more bytes than this
	Config
}

// Run checks the sizes against o.MaxMemory before anything is allocated, opens the backend and
// runs Demo, printing on io.Out. ctx stops the timed runs.
func (o Options) Run(ctx context.Context, io cli.IO) error {
	if err := cli.CheckBackend(o.Backend); err != nil {
		return err
	}
	if err := check(o.Config, o.MaxMemory); err != nil {
		return err
	}
	backend, reason, err := cli.NewWithReason(o.Backend)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	return Demo(ctx, io.Out, backend, reason, o.Config)
}

// check returns an error, before anything is allocated, when cfg cannot run within maxMemory
// bytes.
func check(cfg Config, maxMemory uint64) error {
	if err := cli.CheckMHA(cfg.Batch, cfg.Seq, cfg.DModel, cfg.Heads, maxMemory, cli.Size{Name: "runs", Value: cfg.Runs}); err != nil {
		return err
	}
	b, l, e, h := cfg.Batch, cfg.Seq, cfg.DModel, cfg.Heads
	return cli.CheckMemory(fmt.Sprintf("--batch %d --seq %d --dmodel %d --heads %d", b, l, e, h), "the forward pass", maxMemory,
		cli.TensorNeed{What: "x, q, k, v, output", Count: 5, Dims: []int{b, l, e}},
		cli.TensorNeed{What: "projection weights", Count: 4, Dims: []int{e, e}},
		cli.TensorNeed{What: "scores, softmax, weights", Count: 3, Dims: []int{b, h, l, l}})
}

// Config is what Demo runs: self-attention on x [Batch, Seq, DModel] with Heads heads,
// timed over Runs executions (ctx stops them); Seed seeds the input and the weights.
type Config struct {
	Batch, Seq, DModel, Heads int
	Runs                      int
	Seed                      uint64
}

// RowTolerance is how far from 1 an attention row (float32) may sum.
const RowTolerance = 1e-4

// Demo builds self-attention MultiHeadAttention(x, x, x) with Xavier-uniform weights,
// checks that every attention row sums to 1 and times compilation and cfg.Runs executions, writing what it
// did to w. reason says which backend this is and why (xla.NewWithReason).
func Demo(ctx context.Context, w io.Writer, backend backends.Backend, reason string, cfg Config) error {
	fmt.Fprintf(w, "mhalab demo: multi-head self-attention forward, batch %d, seq %d, d_model %d, %d heads (Xavier-uniform weights, seed %d)\n",
		cfg.Batch, cfg.Seq, cfg.DModel, cfg.Heads, cfg.Seed)
	fmt.Fprintf(w, "backend:  %s\n", reason)

	mctx := mhalib.WithInit(mlctx.New(), mhalib.InitXavierUniform)
	if err := mctx.SetRNGStateFromSeed(int64(cfg.Seed)); err != nil {
		return err
	}
	exec, err := mlctx.NewExec(backend, mctx, func(ctx *mlctx.Context, x *graph.Node) (output, weights *graph.Node) {
		// x: [B, L, E] → output [B, L, E], weights [B, h, L, L]
		return mhalib.MultiHeadAttention(ctx, x, x, x, cfg.Heads).DoneWithWeights()
	})
	if err != nil {
		return err
	}
	defer exec.Finalize()
	x := randomInput(cfg)

	start := time.Now()
	if err := exec.PreCompile(x); err != nil {
		return err
	}
	compile := time.Since(start)

	// First run: also initialises the weights (a separate small graph), so it is not timed.
	start = time.Now()
	outputs, err := exec.Exec(x)
	if err != nil {
		return err
	}
	first := time.Since(start)
	output, weights := outputs[0], outputs[1]
	fmt.Fprintf(w, "output:   %s, attention weights %s\n", output.Shape(), weights.Shape())
	if err := inspect.CheckRowsSumToOne(weights, RowTolerance); err != nil {
		return fmt.Errorf("attention rows do not sum to 1: %w", err)
	}
	fmt.Fprintf(w, "check:    all %d attention rows sum to 1 (tolerance %g)\n", weights.Shape().Size()/cfg.Seq, RowTolerance)
	if err := finalizeAll(outputs); err != nil {
		return err
	}

	times := make([]time.Duration, 0, cfg.Runs)
	for range cfg.Runs {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		outputs, err := exec.Exec(x)
		if err != nil {
			return err
		}
		if err := finalizeAll(outputs); err != nil {
			return err
		}
		times = append(times, time.Since(start))
	}
	fmt.Fprintf(w, "compile:  %s (first run, with weight initialisation: %s)\n", bench.FormatDuration(compile), bench.FormatDuration(first))
	fmt.Fprintf(w, "run:      median %s over %d runs (min %s, max %s)\n", bench.FormatDuration(bench.Median(times)), cfg.Runs,
		bench.FormatDuration(slices.Min(times)), bench.FormatDuration(slices.Max(times)))
	return nil
}

// randomInput returns x: [batch, seq, dModel] with entries uniform in [-1, 1).
func randomInput(cfg Config) *tensors.Tensor {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d68616c6162)) // "mhalab"
	data := make([]float32, cfg.Batch*cfg.Seq*cfg.DModel)
	for i := range data {
		data[i] = 2*rng.Float32() - 1
	}
	return tensors.FromFlatDataAndDimensions(data, cfg.Batch, cfg.Seq, cfg.DModel)
}

func finalizeAll(ts []*tensors.Tensor) error {
	for _, t := range ts {
		if err := t.FinalizeAll(); err != nil {
			return err
		}
	}
	return nil
}
