package main

import (
	"fmt"
	"io"

	"github.com/mhalab/mhalab/internal/mhacmd"
	"github.com/mhalab/mhalab/xla"
)

func runDemo(c command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
	spec := fs.String("backend", "", `backend: go, xla:cpu or xla:cuda (default: $GOMLX_BACKEND, else xla:cpu when its plugin loads, else go)`)
	cfg := mhacmd.DemoConfig{}
	fs.IntVar(&cfg.Runs, "runs", 10, "timed runs (the median is reported)")
	fs.IntVar(&cfg.Batch, "batch", 32, "batch size B")
	fs.IntVar(&cfg.Seq, "seq", 128, "sequence length L")
	fs.IntVar(&cfg.DModel, "dmodel", 512, "model (embedding) dimension E")
	fs.IntVar(&cfg.Heads, "heads", 8, "number of heads h (must divide E)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the input and of the weight initialisation")
	maxMemory := addMaxMemoryFlag(fs, "the forward pass")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if err := xla.CheckSpec(*spec); err != nil {
		return &usageError{err.Error()}
	}
	if err := checkDemo(cfg, uint64(*maxMemory)); err != nil {
		return err
	}
	backend, reason, err := xla.NewWithReason(*spec)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	return mhacmd.Demo(stdout, backend, reason, cfg)
}

// checkDemo returns an error, before anything is allocated, when cfg cannot run within
// maxMemory bytes.
func checkDemo(cfg mhacmd.DemoConfig, maxMemory uint64) error {
	if err := checkSizes(sizeFlag{"runs", cfg.Runs}, sizeFlag{"batch", cfg.Batch}, sizeFlag{"seq", cfg.Seq},
		sizeFlag{"dmodel", cfg.DModel}, sizeFlag{"heads", cfg.Heads}); err != nil {
		return err
	}
	if err := checkHeads("heads", cfg.Heads, "dmodel", cfg.DModel); err != nil {
		return err
	}
	if maxMemory == 0 {
		return fmt.Errorf("--max-memory 0: want a positive size")
	}
	b, l, e, h := cfg.Batch, cfg.Seq, cfg.DModel, cfg.Heads
	return checkMemory(fmt.Sprintf("--batch %d --seq %d --dmodel %d --heads %d", b, l, e, h), "the forward pass", maxMemory,
		tensorNeed{"x, q, k, v, output", 5, []int{b, l, e}},
		tensorNeed{"projection weights", 4, []int{e, e}},
		tensorNeed{"scores, softmax, weights", 3, []int{b, h, l, l}})
}
