package mhacmd

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/bench"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/inspect"
)

// DemoConfig is what Demo runs: self-attention on x [Batch, Seq, DModel] with Heads heads,
// timed over Runs executions; Seed seeds the input and the weights.
type DemoConfig struct {
	Batch, Seq, DModel, Heads int
	Runs                      int
	Seed                      uint64
}

// RowTolerance is how far from 1 an attention row (float32) may sum.
const RowTolerance = 1e-4

// Demo builds self-attention MultiHeadAttention(x, x, x) with Xavier-uniform weights,
// checks that every attention row sums to 1 and times compilation and cfg.Runs executions, writing what it
// did to w. reason says which backend this is and why (xla.NewWithReason).
func Demo(w io.Writer, backend backends.Backend, reason string, cfg DemoConfig) error {
	fmt.Fprintf(w, "mhalab demo: multi-head self-attention forward, batch %d, seq %d, d_model %d, %d heads (Xavier-uniform weights, seed %d)\n",
		cfg.Batch, cfg.Seq, cfg.DModel, cfg.Heads, cfg.Seed)
	fmt.Fprintf(w, "backend:  %s\n", reason)

	ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
	if err := ctx.SetRNGStateFromSeed(int64(cfg.Seed)); err != nil {
		return err
	}
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, x *graph.Node) (output, weights *graph.Node) {
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
func randomInput(cfg DemoConfig) *tensors.Tensor {
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
