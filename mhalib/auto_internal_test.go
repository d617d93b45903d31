package mhalib

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
)

// autoCase is one resolution of Auto: builder b's options on dimensions d with lk keys.
type autoCase struct {
	name        string
	b           MHABuilder
	d           mhaDims
	lk          int
	withWeights bool
	want        Formulation
}

// TestAutoFormulation checks the rule of auto.go: Flash for many queries and keys (fewer with a
// causal mask), HeadParallel for small shapes and wherever Flash is not allowed.
func TestAutoFormulation(t *testing.T) {
	even := func(lq int) mhaDims { return mhaDims{lq: lq, sizes: []int{8, 8}, even: true} }
	for _, c := range []autoCase{
		{"seed003 L128", MHABuilder{}, even(128), 128, false, HeadParallel},
		{"L256", MHABuilder{}, even(256), 256, false, HeadParallel},
		{"L511 keys", MHABuilder{}, even(4096), 511, false, HeadParallel},
		{"L512", MHABuilder{}, even(512), 512, false, Flash},
		{"llm L1024", MHABuilder{}, even(1024), 1024, false, Flash},
		{"causal L512", MHABuilder{AttentionOptions: AttentionOptions[*MHABuilder]{cfg: attentionConfig{causal: CausalTopLeft}}}, even(512), 512, false, Flash},
		{"causal L256", MHABuilder{AttentionOptions: AttentionOptions[*MHABuilder]{cfg: attentionConfig{causal: CausalTopLeft}}}, even(256), 256, false, HeadParallel},
		{"one query, long cache", MHABuilder{AttentionOptions: AttentionOptions[*MHABuilder]{cfg: attentionConfig{causal: CausalBottomRight}}}, even(1), 8192, false, HeadParallel},
		{"weights asked for", MHABuilder{}, even(4096), 4096, true, HeadParallel},
		{"uneven heads", MHABuilder{}, mhaDims{lq: 4096, sizes: []int{8, 4}}, 4096, false, HeadParallel},
		{"dropout", MHABuilder{AttentionOptions: AttentionOptions[*MHABuilder]{cfg: attentionConfig{dropout: dropoutSpec{rate: 0.1}}}}, even(4096), 4096, false, HeadParallel},
		{"head strategy set", MHABuilder{strategySet: true}, even(4096), 4096, false, HeadParallel},
	} {
		if got := c.b.autoFormulation(c.d, c.lk, c.withWeights, false); got != c.want {
			t.Errorf("%s: Auto chose %s, want %s", c.name, got, c.want)
		}
	}
	if f := MultiHeadAttention(nil, nil, nil, nil, 1).formulation; f != Auto {
		t.Errorf("default formulation %s, want Auto", f)
	}
}

// TestFlashBlocks checks the block sizes chosen by shape.
func TestFlashBlocks(t *testing.T) {
	for _, c := range []struct {
		lq             int
		causal         bool
		blockQ, blockK int
	}{
		{512, false, 512, 128},
		{512, true, 128, 128},
		{1024, true, 128, 128},
		{2048, true, 256, 128},
		{4096, true, 512, 128},
		{4096, false, 512, 128},
		{65536, true, 512, 128},
	} {
		if q, k := flashBlocks(c.lq, c.causal); q != c.blockQ || k != c.blockK {
			t.Errorf("flashBlocks(%d, causal %v) = %d, %d; want %d, %d", c.lq, c.causal, q, k, c.blockQ, c.blockK)
		}
	}
}

// TestScaleFoldedExactly checks that attention with a power-of-two scale, folded into q, gives
// bit for bit what scaling the scores gives (the per-head path scales the scores).
func TestScaleFoldedExactly(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, h, lq, lk, dk = 2, 2, 7, 9, 16
		rng := rand.New(rand.NewPCG(18, 3))
		rnd := func(dims ...int) *tensors.Tensor {
			data := make([]float32, dims[0]*dims[1]*dims[2]*dims[3])
			for i := range data {
				data[i] = float32(rng.NormFloat64())
			}
			return tensors.FromFlatDataAndDimensions(data, dims...)
		}
		q, k, v := rnd(B, h, lq, dk), rnd(B, h, lk, dk), rnd(B, h, lk, dk)
		run := func(scales []float64) []float32 {
			exec := MustNewExec(backend, func(q, k, v *Node) (*Node, *Node) {
				ms := newMaskSet(B, h, lq, lk, dtypes.Float32, Mask{}, "", Mask{}, "", CausalTopLeft, FillNegInf())
				return attend(q, k, v, scales, ms, dropoutSpec{})
			})
			defer exec.Finalize()
			outs := exec.MustExec(q, k, v)
			return slices.Concat(tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1]))
		}
		if !exactScale(0.25, dtypes.Float32) || exactScale(0.3, dtypes.Float32) || exactScale(0.25, dtypes.Float16) {
			t.Fatal("exactScale: wrong answer for 0.25 / 0.3 / float16")
		}
		folded, perHead := run([]float64{0.25}), run([]float64{0.25, 0.25})
		for i := range folded {
			if folded[i] != perHead[i] {
				t.Fatalf("element %d: folded scale %v, scaled scores %v", i, folded[i], perHead[i])
			}
		}
	})
}

// TestSelfAttentionOneProjection checks that self-attention (one node as query, key and value,
// projected with one matrix product) equals the same attention with query, key and value as
// distinct nodes (projected one by one): output and the gradient of the fused weights.
func TestSelfAttentionOneProjection(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, L, E, H = 2, 6, 16, 4
		rng := rand.New(rand.NewPCG(18, 4))
		data := make([]float32, B*L*E)
		for i := range data {
			data[i] = float32(rng.NormFloat64())
		}
		x := tensors.FromFlatDataAndDimensions(data, B, L, E)
		run := func(self bool) (out, grad []float32) {
			ctx := context.New()
			ctx.SetParam(context.ParamInitialSeed, int64(7))
			ctx = WithInit(ctx, InitTorchLinear) // nonzero biases
			exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) []*Node {
				k, v := x, x
				if !self {
					// The same values as other nodes: x + 0 is exact.
					k, v = AddScalar(x, 0), Add(x, Zeros(x.Graph(), shapes.Make(x.DType(), B, L, E)))
				}
				y := MultiHeadAttention(ctx, x, k, v, H).Causal(CausalTopLeft).Done() // [B, L, E]
				w := ctx.In(DefaultScope).GetVariableByScopeAndName(ctx.In(DefaultScope).Scope(), VarInProjWeight)
				loss := ReduceAllSum(Mul(y, y))
				return []*Node{y, Gradient(loss, w.ValueGraph(x.Graph()))[0]}
			})
			defer exec.Finalize()
			outs := exec.MustExec(x)
			return tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
		}
		outSelf, gradSelf := run(true)
		outSep, gradSep := run(false)
		for _, c := range []struct {
			what      string
			got, want []float32
		}{{"output", outSelf, outSep}, {"∂/∂in_proj_weight", gradSelf, gradSep}} {
			for i := range c.got {
				if d := float64(c.got[i] - c.want[i]); d > 1e-5 || d < -1e-5 || c.got[i] != c.got[i] {
					t.Fatalf("%s element %d: self-attention %v, distinct inputs %v", c.what, i, c.got[i], c.want[i])
				}
			}
		}
	})
}

// TestAutoOnGPU checks Auto's rule on a GPU: plain attention while its float32 scores take at
// most 512 MiB (the H200 measured it faster up to there), Flash beyond, whatever the mask.
func TestAutoOnGPU(t *testing.T) {
	even := func(b, h, lq int) mhaDims {
		return mhaDims{batch: b, lq: lq, sizes: slices.Repeat([]int{64}, h), even: true}
	}
	causal := MHABuilder{AttentionOptions: AttentionOptions[*MHABuilder]{cfg: attentionConfig{causal: CausalTopLeft}}}
	for _, c := range []autoCase{
		{"llm B8 h12 L1024 (384 MiB)", MHABuilder{}, even(8, 12, 1024), 1024, false, HeadParallel},
		{"llm causal", causal, even(8, 12, 1024), 1024, false, HeadParallel},
		{"long B1 h8 L4096 (512 MiB)", MHABuilder{}, even(1, 8, 4096), 4096, false, HeadParallel},
		{"long causal", causal, even(1, 8, 4096), 4096, false, HeadParallel},
		{"B2 h8 L4096 (1 GiB)", MHABuilder{}, even(2, 8, 4096), 4096, false, Flash},
		{"L16384 causal (8 GiB)", causal, even(1, 8, 16384), 16384, false, Flash},
		{"weights asked for", MHABuilder{}, even(1, 8, 16384), 16384, true, HeadParallel},
	} {
		if got := c.b.autoFormulation(c.d, c.lk, c.withWeights, true); got != c.want {
			t.Errorf("%s: Auto on a GPU chose %s, want %s", c.name, got, c.want)
		}
		if c.withWeights {
			continue
		}
		if got := autoOnGPU(c.d.batch, len(c.d.sizes), c.d.lq, c.lk); got != c.want {
			t.Errorf("%s: autoOnGPU = %s, want %s", c.name, got, c.want)
		}
	}
}

// TestGPUDescription checks how a GPU backend is recognised, on GoMLX's descriptions, and that
// every backend the tests run on describes itself the way gpuDescription expects (so that a
// GoMLX that describes backends differently fails here instead of silently choosing the CPU
// rule on a GPU).
func TestGPUDescription(t *testing.T) {
	for desc, want := range map[string]bool{
		"xla:cuda - plugin [1 device(s)]": true,
		"xla:/opt/p/pjrt_c_api_cuda_plugin.so - PJRT plugin (/opt/p/pjrt_c_api_cuda_plugin.so) v0.115 [1 device(s)]": true,
		"xla:/root/.local/lib/go-xla/pjrt_c_api_cpu_plugin.so - PJRT plugin v0.81 [1 device(s)]":                     false,
		"xla:/opt/cuda/lib/pjrt_c_api_cpu_plugin.so - PJRT plugin (/opt/cuda/x/pjrt_c_api_cuda_plugin.so) v0.81":     false,
		"xla:cpu - plugin [1 device(s)]": false,
		"SimpleGo (go)":                  false,
	} {
		if got := gpuDescription(desc); got != want {
			t.Errorf("gpuDescription(%q) = %v, want %v", desc, got, want)
		}
	}
	pluginName := regexp.MustCompile(`^xla:(cpu|cuda|/\S*/pjrt_c_api_(cpu|cuda)_plugin\.so) - `)
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		desc := backend.Description()
		if backend.Name() != "xla" {
			if onGPU(backend) {
				t.Errorf("%s (%q) taken for a GPU", backend.Name(), desc)
			}
			return
		}
		m := pluginName.FindStringSubmatch(desc)
		if m == nil {
			t.Fatalf("XLA backend described %q: gpuDescription expects \"xla:<cpu|cuda|/path/pjrt_c_api_<platform>_plugin.so> - …\"", desc)
		}
		gpu := m[1] == "cuda" || m[2] == "cuda"
		if onGPU(backend) != gpu {
			t.Errorf("onGPU(%q) = %v, want %v", desc, !gpu, gpu)
		}
	})
}
