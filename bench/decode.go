package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/mhalib/decode"
)

type decodeSettings struct {
	model decode.Decoder
	steps int // timed cached steps, at the end of the context
	runs  int // timed recomputations
}

func decodeConfig(quick bool) decodeSettings {
	if quick {
		return decodeSettings{model: decode.Decoder{Vocab: 64, Embed: 64, Heads: 4, Layers: 1, MaxLen: 64}, steps: 4, runs: 3}
	}
	return decodeSettings{model: decode.Decoder{Vocab: 1024, Embed: 512, Heads: 8, Layers: 2, MaxLen: 2048}, steps: 32, runs: 3}
}

// benchDecode measures greedy decoding of one sequence at the end of a MaxLen context:
// with the KV cache (prefill MaxLen − steps tokens, then time steps single-token steps) and
// without (each token recomputes the model over all MaxLen positions: static shapes, causal, so
// the padding after the current position changes nothing).
func benchDecode(backend backends.Backend, spec string, s decodeSettings) decodeResult {
	m := s.model
	res := decodeResult{Backend: spec, Context: m.MaxLen,
		Model: fmt.Sprintf("Decoder V%d E%d h%d layers %d, L %d", m.Vocab, m.Embed, m.Heads, m.Layers, m.MaxLen)}
	fail := func(err error) decodeResult { res.Error = err.Error(); return res }
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1))
	cache, err := m.NewKVCache(1)
	if err != nil {
		return fail(err)
	}
	session, err := decode.NewSession(backend, ctx, m, cache)
	if err != nil {
		return fail(err)
	}
	defer session.Finalize()
	rng := rand.New(rand.NewPCG(2, 3))
	seq := make([]int32, m.MaxLen)
	for i := range seq {
		seq[i] = int32(rng.IntN(m.Vocab))
	}
	prefill := m.MaxLen - s.steps
	if _, err := session.Step(tensors.FromFlatDataAndDimensions(slices.Clone(seq[:prefill]), 1, prefill)); err != nil {
		return fail(err)
	}
	// The first single-token step compiles the step graph.
	start := time.Now()
	var last *tensors.Tensor
	if last, err = session.Step(tensors.FromFlatDataAndDimensions([]int32{seq[prefill]}, 1, 1)); err != nil {
		return fail(err)
	}
	res.CachedCompileMS = msSince(start)
	var stepMS []float64
	for i := prefill + 1; i < m.MaxLen; i++ {
		t0 := time.Now()
		if last, err = session.Step(tensors.FromFlatDataAndDimensions([]int32{seq[i]}, 1, 1)); err != nil {
			return fail(err)
		}
		stepMS = append(stepMS, msSince(t0))
	}
	res.CachedStepMS = Median(stepMS)
	res.CachedTokensPerS = 1000 / res.CachedStepMS

	recompute, err := context.NewExec(backend, ctx, func(ctx *context.Context, tokens *graph.Node) *graph.Node {
		return m.Logits(ctx, tokens) // [1, MaxLen, V]
	})
	if err != nil {
		return fail(err)
	}
	defer recompute.Finalize()
	tokens := tensors.FromFlatDataAndDimensions(slices.Clone(seq), 1, m.MaxLen)
	var full *tensors.Tensor
	t, err := timeRuns(func() error { return recompute.PreCompile(tokens) }, func() error {
		out, err := recompute.Exec(tokens)
		if err == nil {
			full = out[0]
		}
		return err
	}, 1, s.runs, time.Minute)
	if err != nil {
		return fail(err)
	}
	res.RecomputeCompileM = t.compileMS
	res.RecomputeMS = Median(t.timesMS)
	res.RecomputeTokPerS = 1000 / res.RecomputeMS
	res.Speedup = res.CachedTokensPerS / res.RecomputeTokPerS
	// The last cached step's logits are the recompute's last row.
	got, want := tensors.MustCopyFlatData[float32](last), tensors.MustCopyFlatData[float32](full)
	want = want[len(want)-m.Vocab:]
	for i := range got {
		res.MaxLogitDiff = max(res.MaxLogitDiff, float64(abs32(got[i]-want[i])))
	}
	return res
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
