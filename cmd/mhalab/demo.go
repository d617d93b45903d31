package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/xla"
)

var demoCmd = command{
	name:    "demo",
	args:    "[--backend B] [--runs N] [--batch B] [--seq L] [--dmodel E] [--heads H] [--seed S]",
	summary: "one multi-head self-attention forward pass (default batch 32, seq 128, d_model 512, 8 heads): checked and timed",
}

func init() {
	demoCmd.run = runDemoCmd
	register(demoCmd)
}

// demoConfig is what the demo runs.
type demoConfig struct {
	batch, seq, dModel, heads int
	runs                      int
	seed                      uint64
}

// rowTolerance is how far from 1 an attention row (float32) may sum.
const rowTolerance = 1e-4

func runDemoCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(demoCmd.name)
	spec := fs.String("backend", "", `backend: go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`)
	cfg := demoConfig{}
	fs.IntVar(&cfg.runs, "runs", 10, "timed runs (the median is reported)")
	fs.IntVar(&cfg.batch, "batch", 32, "batch size B")
	fs.IntVar(&cfg.seq, "seq", 128, "sequence length L")
	fs.IntVar(&cfg.dModel, "dmodel", 512, "model (embedding) dimension E")
	fs.IntVar(&cfg.heads, "heads", 8, "number of heads h (must divide E)")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the input and of the weight initialisation")
	if err := parseFlags(fs, demoCmd, args, stdout); err != nil {
		return err
	}
	if err := xla.CheckSpec(*spec); err != nil {
		return &usageError{err.Error()}
	}
	switch {
	case cfg.runs < 1:
		return &usageError{fmt.Sprintf("--runs %d: want at least 1", cfg.runs)}
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
	return runDemo(stdout, backend, reason, cfg)
}

// runDemo builds self-attention MultiHeadAttention(x, x, x) with Xavier-uniform weights,
// checks that every attention row sums to 1 and times compilation and cfg.runs executions.
func runDemo(w io.Writer, backend backends.Backend, reason string, cfg demoConfig) error {
	fmt.Fprintf(w, "mhalab demo: multi-head self-attention forward, batch %d, seq %d, d_model %d, %d heads (Xavier-uniform weights, seed %d)\n",
		cfg.batch, cfg.seq, cfg.dModel, cfg.heads, cfg.seed)
	fmt.Fprintf(w, "backend:  %s\n", reason)

	ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
	if err := ctx.SetRNGStateFromSeed(int64(cfg.seed)); err != nil {
		return err
	}
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, x *Node) (output, weights *Node) {
		// x: [B, L, E] → output [B, L, E], weights [B, h, L, L]
		return mhalib.MultiHeadAttention(ctx, x, x, x, cfg.heads).DoneWithWeights(false)
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
	if err := mhalib.CheckRowsSumToOne(weights, rowTolerance); err != nil {
		return fmt.Errorf("attention rows do not sum to 1: %w", err)
	}
	fmt.Fprintf(w, "check:    all %d attention rows sum to 1 (tolerance %g)\n", weights.Shape().Size()/cfg.seq, rowTolerance)
	if err := finalizeAll(outputs); err != nil {
		return err
	}

	times := make([]time.Duration, 0, cfg.runs)
	for range cfg.runs {
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
	slices.Sort(times)
	fmt.Fprintf(w, "compile:  %s (first run, with weight initialisation: %s)\n", ms(compile), ms(first))
	fmt.Fprintf(w, "run:      median %s over %d runs (min %s, max %s)\n", ms(median(times)), cfg.runs, ms(times[0]), ms(times[len(times)-1]))
	return nil
}

// randomInput returns x: [batch, seq, dModel] with entries uniform in [-1, 1).
func randomInput(cfg demoConfig) *tensors.Tensor {
	rng := rand.New(rand.NewPCG(cfg.seed, 0x6d68616c6162)) // "mhalab"
	data := make([]float32, cfg.batch*cfg.seq*cfg.dModel)
	for i := range data {
		data[i] = 2*rng.Float32() - 1
	}
	return tensors.FromFlatDataAndDimensions(data, cfg.batch, cfg.seq, cfg.dModel)
}

func finalizeAll(ts []*tensors.Tensor) error {
	for _, t := range ts {
		if err := t.FinalizeAll(); err != nil {
			return err
		}
	}
	return nil
}

// median of sorted durations.
func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// ms formats d with 3 significant digits: "8.21 ms", "118 ms", "2.41 s".
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.3g s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}
