package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"

	"github.com/dustin/go-humanize"
	"github.com/mhalab/mhalab/internal/mhacmd"
	"github.com/mhalab/mhalab/xla"
)

func runHLO(c command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.name)
	stage := fs.String("stage", mhacmd.StableHLO, "what to print: stablehlo (GoMLX's program), hlo (XLA's HLO before optimisation) or optimized (after optimisation)")
	stats := fs.Bool("stats", false, "print only the op counts (and fusions), not the text")
	spec := fs.String("backend", xla.SpecCPU, "XLA backend to compile with: xla:cpu or xla:cuda (the pure-Go backend has no HLO)")
	cfg := mhacmd.HLOConfig{}
	fs.IntVar(&cfg.Batch, "batch", 2, "batch size B")
	fs.IntVar(&cfg.Seq, "seq", 8, "sequence length L")
	fs.IntVar(&cfg.DModel, "dmodel", 32, "model (embedding) dimension E")
	fs.IntVar(&cfg.Heads, "heads", 4, "number of heads h (must divide E)")
	fs.BoolVar(&cfg.Separate, "separate", false, "separate q/k/v projection weights instead of the fused in_proj_weight")
	fs.BoolVar(&cfg.Causal, "causal", false, "causal mask (key j ≤ query i)")
	devices := fs.Int("devices", 1, "compile head-parallel attention for N devices (xla:cpu makes N virtual devices) and show one device's HLO (--stage optimized unless given) and its collectives; N must divide --heads")
	maxMemory := addMaxMemoryFlag(fs, "the input and the weights (the graph is compiled, not run)")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	switch *stage {
	case mhacmd.StableHLO, mhacmd.HLOStage, mhacmd.Optimized:
	default:
		return usagef("--stage %q: want stablehlo, hlo or optimized", *stage)
	}
	if err := xla.CheckSpec(*spec); err != nil {
		return &usageError{err.Error()}
	}
	if *spec == xla.SpecGo {
		return usagef("--backend go: the pure-Go backend does not compile to HLO; use xla:cpu or xla:cuda")
	}
	if err := checkHLO(cfg, uint64(*maxMemory)); err != nil {
		return err
	}
	if *devices < 1 || *devices > xla.MaxDevices {
		return usagef("--devices %d: want 1 to %d", *devices, xla.MaxDevices)
	}
	stageSet := false
	fs.Visit(func(f *flag.Flag) { stageSet = stageSet || f.Name == "stage" })
	if *devices > 1 && !stageSet {
		*stage = mhacmd.Optimized // the partitioned program is XLA's, after its SPMD passes
	}
	if *devices > 1 && *stage == mhacmd.StableHLO {
		return usagef("--devices %d shows XLA's HLO of one device's program: use --stage hlo or --stage optimized", *devices)
	}
	if *devices > 1 && cfg.Heads%*devices != 0 {
		return usagef("--devices %d does not divide --heads %d: each device holds whole heads", *devices, cfg.Heads)
	}
	if *stage != mhacmd.StableHLO {
		// XLA reads $XLA_FLAGS once, when the process creates its first XLA client: before
		// the backend below.
		if err := xla.EnableHLODump(); err != nil {
			return err
		}
	}
	if *devices > 1 {
		backend, reason, err := xla.NewWithDevices(*spec, *devices)
		if err != nil {
			return err
		}
		defer backend.Finalize()
		fmt.Fprintf(stderr, "mhalab hlo: backend %s\n", reason)
		return mhacmd.HLODevices(stdout, stderr, backend, cfg, *devices, *stage, *stats)
	}
	backend, reason, err := xla.NewWithReason(*spec)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	fmt.Fprintf(stderr, "mhalab hlo: backend %s\n", reason)
	return mhacmd.HLO(stdout, stderr, backend, cfg, *stage, *stats)
}

// checkHLO returns an error, before anything is allocated, when the sizes of cfg are not
// positive, its heads do not divide d_model, the input and weights (all mhalab hlo allocates)
// need more than maxMemory bytes, or the graph's scores [B, h, L, L] would have more bytes than
// a size can count (int64).
func checkHLO(cfg mhacmd.HLOConfig, maxMemory uint64) error {
	if err := checkSizes(sizeFlag{"batch", cfg.Batch}, sizeFlag{"seq", cfg.Seq},
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
