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
	"github.com/mhalab/mhalab/bench"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/xla"
)

// demoConfig is what the demo runs.
type demoConfig struct {
	batch, seq, dModel, heads int
	runs                      int
	seed                      uint64
}

// rowTolerance is how far from 1 an attention row (float32) may sum.
const rowTolerance = 1e-4

func runDemo(c command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
	spec := fs.String("backend", "", `backend: go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`)
	cfg := demoConfig{}
	fs.IntVar(&cfg.runs, "runs", 10, "timed runs (the median is reported)")
	fs.IntVar(&cfg.batch, "batch", 32, "batch size B")
	fs.IntVar(&cfg.seq, "seq", 128, "sequence length L")
	fs.IntVar(&cfg.dModel, "dmodel", 512, "model (embedding) dimension E")
	fs.IntVar(&cfg.heads, "heads", 8, "number of heads h (must divide E)")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the input and of the weight initialisation")
	maxMemory := addMaxMemoryFlag(fs, "the forward pass")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if err := xla.CheckSpec(*spec); err != nil {
		return &usageError{err.Error()}
	}
	if err := cfg.check(uint64(*maxMemory)); err != nil {
		return err
	}
	backend, reason, err := xla.NewWithReason(*spec)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	return runDemoOn(stdout, backend, reason, cfg)
}

// check returns an error, before anything is allocated, when cfg cannot run within maxMemory
// bytes.
func (cfg demoConfig) check(maxMemory uint64) error {
	if err := checkSizes(sizeFlag{"runs", cfg.runs}, sizeFlag{"batch", cfg.batch}, sizeFlag{"seq", cfg.seq},
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
	return checkMemory(fmt.Sprintf("--batch %d --seq %d --dmodel %d --heads %d", b, l, e, h), "the forward pass", maxMemory,
		tensorNeed{"x, q, k, v, output", 5, []int{b, l, e}},
		tensorNeed{"projection weights", 4, []int{e, e}},
		tensorNeed{"scores, softmax, weights", 3, []int{b, h, l, l}})
}

// runDemoOn builds self-attention MultiHeadAttention(x, x, x) with Xavier-uniform weights,
// checks that every attention row sums to 1 and times compilation and cfg.runs executions.
func runDemoOn(w io.Writer, backend backends.Backend, reason string, cfg demoConfig) error {
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
	fmt.Fprintf(w, "compile:  %s (first run, with weight initialisation: %s)\n", bench.FormatDuration(compile), bench.FormatDuration(first))
	fmt.Fprintf(w, "run:      median %s over %d runs (min %s, max %s)\n", bench.FormatDuration(bench.Median(times)), cfg.runs,
		bench.FormatDuration(slices.Min(times)), bench.FormatDuration(slices.Max(times)))
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
