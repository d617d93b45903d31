package bench

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib"
)

func causalSuffix(causal bool) string {
	if causal {
		return " causal"
	}
	return ""
}

// mhaCases are the forward-pass shapes: seed 003's benchmark (B32 L128 D512 h8, 10 warm-up +
// 100 timed passes), a long sequence (B1 L4096 D512 h8), LLMs-from-scratch's shape (B8 L1024
// E768 h12), with causal variants and flash next to plain attention where it matters. The
// mhalib rows name the formulation explicitly; the report marks the one Auto (the default)
// chooses.
func mhaCases(quick bool) []mhaCase {
	if quick {
		return []mhaCase{
			{Group: "seed003", B: 4, L: 32, E: 64, H: 4, Warmup: 2, Runs: 5},
			{Group: "long", B: 1, L: 512, E: 64, H: 4, Warmup: 1, Runs: 3},
			{Group: "long", B: 1, L: 512, E: 64, H: 4, Flash: true, Warmup: 1, Runs: 3},
			{Group: "long", B: 1, L: 512, E: 64, H: 4, Causal: true, Flash: true, Warmup: 1, Runs: 3},
			{Group: "llm", B: 2, L: 128, E: 96, H: 6, Causal: true, Warmup: 1, Runs: 3},
		}
	}
	return []mhaCase{
		{Group: "seed003", B: 32, L: 128, E: 512, H: 8, Warmup: 10, Runs: 100},
		{Group: "seed003", B: 32, L: 128, E: 512, H: 8, Causal: true, Warmup: 10, Runs: 100},
		{Group: "long", B: 1, L: 4096, E: 512, H: 8, Warmup: 2, Runs: 20},
		{Group: "long", B: 1, L: 4096, E: 512, H: 8, Flash: true, Warmup: 2, Runs: 20},
		{Group: "long", B: 1, L: 4096, E: 512, H: 8, Causal: true, Warmup: 2, Runs: 20},
		{Group: "long", B: 1, L: 4096, E: 512, H: 8, Causal: true, Flash: true, Warmup: 2, Runs: 20},
		{Group: "llm", B: 8, L: 1024, E: 768, H: 12, Warmup: 2, Runs: 10},
		{Group: "llm", B: 8, L: 1024, E: 768, H: 12, Flash: true, Warmup: 2, Runs: 10},
		{Group: "llm", B: 8, L: 1024, E: 768, H: 12, Causal: true, Warmup: 2, Runs: 10},
		{Group: "llm", B: 8, L: 1024, E: 768, H: 12, Causal: true, Flash: true, Warmup: 2, Runs: 10},
	}
}

// autoChoice reports whether mhalib's default formulation (Auto) computes c on backend as c does
// (plain or flash).
func (c mhaCase) autoChoice(backend backends.Backend) bool {
	return (mhalib.AutoFormulationOn(backend, c.B, c.H, c.L, c.L, c.causal()) == mhalib.Flash) == c.Flash
}

// causal is the case's causal mask: CausalTopLeft for a causal case.
func (c mhaCase) causal() mhalib.Causal {
	if c.Causal {
		return mhalib.CausalTopLeft
	}
	return mhalib.NoCausal
}

// benchMHA times self-attention MultiHeadAttention(x, x, x) on one backend: PreCompile, Warmup
// untimed passes (the first also initialises the weights), then passes timed one by one until
// Runs are done or the budget is spent (at least 3).
func benchMHA(backend backends.Backend, spec string, c mhaCase, budget time.Duration) mhaResult {
	res := mhaResult{mhaCase: c, Backend: spec, Impl: c.impl(), AutoChoice: c.autoChoice(backend)}
	causal, formulation := c.causal(), mhalib.HeadParallel
	if c.Flash {
		formulation = mhalib.Flash
	}
	ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
	ctx.SetParam(context.ParamInitialSeed, int64(1))
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, x *graph.Node) *graph.Node {
		return mhalib.MultiHeadAttention(ctx, x, x, x, c.H).Causal(causal).Formulation(formulation).Done() // [B, L, E]
	})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer exec.Finalize()
	x := uniformTensor(1, c.B, c.L, c.E)
	t, err := timeRuns(func() error { return exec.PreCompile(x) }, func() error {
		out, err := exec.Exec(x)
		if err != nil {
			return err
		}
		return finalizeAll(out)
	}, c.Warmup, c.Runs, budget)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.CompileMS, res.TimesMS = t.compileMS, t.timesMS
	res.MedianMS, res.MinMS = Median(t.timesMS), slices.Min(t.timesMS)
	res.CPUMS = Median(t.cpuMS)
	res.GFLOPS = c.flops() / (res.MedianMS * 1e6)
	return res
}

// timing is what timeRuns measured.
type timing struct {
	compileMS float64
	timesMS   []float64
	cpuMS     []float64 // the process's CPU time during each timed run (all threads)
}

// timeRuns times compile once, run warmup times untimed, then run until runs timed runs are
// done or budget has passed (at least 3 timed runs).
func timeRuns(compile, run func() error, warmup, runs int, budget time.Duration) (timing, error) {
	var t timing
	start := time.Now()
	if err := compile(); err != nil {
		return t, err
	}
	t.compileMS = msSince(start)
	for range warmup {
		if err := run(); err != nil {
			return t, err
		}
	}
	start = time.Now()
	for len(t.timesMS) < runs {
		c0, t0 := processCPUMS(), time.Now()
		if err := run(); err != nil {
			return t, err
		}
		t.timesMS = append(t.timesMS, msSince(t0))
		t.cpuMS = append(t.cpuMS, processCPUMS()-c0)
		if len(t.timesMS) >= 3 && time.Since(start) > budget {
			break
		}
	}
	return t, nil
}

// uniformTensor returns a float32 tensor with entries uniform in [-1, 1).
func uniformTensor(seed uint64, dims ...int) *tensors.Tensor {
	rng := rand.New(rand.NewPCG(seed, 0x62656e6368)) // "bench"
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = 2*rng.Float32() - 1
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// finalizeAll frees the outputs of one execution.
func finalizeAll(ts []*tensors.Tensor) error {
	for _, t := range ts {
		if err := t.FinalizeAll(); err != nil {
			return err
		}
	}
	return nil
}
