package parity_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/commands/sdpa"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/torchio"
)

// TestModernParity compares mhalib's modern attention (issue 13) with the PyTorch references of
// parity/modern_gen.py: attention cases through `mhalab sdpa`'s logic (internal/commands/sdpa) with
// SDPA and with FlashAttention, RoPE cases, MLA cases. Fixtures are in testdata/modern;
// `make parity` regenerates them (and random configurations) into $MHALAB_MODERN_PARITY_DIR.
//
// Float64: |mhalib − torch float64| ≤ 1e-9. Float32 (the inputs are float32 values):
// |mhalib − torch float64| ≤ 2·|torch float32 − torch float64| + 8 ulps of the largest output.
func TestModernParity(t *testing.T) {
	dir := os.Getenv("MHALAB_MODERN_PARITY_DIR")
	if dir == "" {
		dir = filepath.Join("testdata", "modern")
	}
	files, err := filepath.Glob(filepath.Join(dir, "modern_*.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".inputs.safetensors") {
			cases = append(cases, f)
		}
	}
	sort.Strings(cases)
	if len(cases) == 0 {
		t.Fatalf("no modern_*.safetensors in %s", dir)
	}
	t.Logf("%d PyTorch references in %s", len(cases), dir)
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, path := range cases {
			name := strings.TrimSuffix(filepath.Base(path), ".safetensors")
			t.Run(name, func(t *testing.T) {
				f, err := torchio.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var cfg map[string]any
				if err := json.Unmarshal([]byte(f.Metadata["config"]), &cfg); err != nil {
					t.Fatalf("metadata config: %v", err)
				}
				out64, out32 := f.Tensors["out64"], f.Tensors["out32"]
				for _, dt := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
					var results map[string]*tensors.Tensor
					switch cfg["kind"] {
					case "attention":
						results = modernAttention(t, backend, f.Tensors, cfg, dt)
					case "rope":
						results = modernRoPE(t, backend, f.Tensors["x"], cfg, dt)
					case "mla":
						results = modernMLA(t, backend, f.Tensors, cfg, dt)
					default:
						t.Fatalf("unknown kind %v", cfg["kind"])
					}
					for what, got := range results {
						checkModern(t, fmt.Sprintf("%s %s", dt, what), got, out64, out32)
					}
				}
			})
		}
	})
}

// checkModern applies the bounds of TestModernParity.
func checkModern(t *testing.T, what string, got, out64, out32 *tensors.Tensor) {
	t.Helper()
	g, want, torch32 := flat64(got), flat64(out64), flat64(out32)
	if len(g) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(g), len(want))
	}
	errMax, torchErr, scale := 0.0, 0.0, 1.0
	for i := range want {
		errMax = math.Max(errMax, math.Abs(g[i]-want[i]))
		torchErr = math.Max(torchErr, math.Abs(torch32[i]-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
		if math.IsNaN(g[i]) {
			errMax = math.Inf(1)
		}
	}
	bound := 1e-9
	if got.DType() == dtypes.Float32 {
		bound = 2*torchErr + 8*math.Pow(2, -23)*scale
	}
	if !(errMax <= bound) {
		t.Errorf("%s: max |mhalib − torch float64| = %.3g > bound %.3g (torch float32's own error %.3g)", what, errMax, bound, torchErr)
	}
}

func flat64(x *tensors.Tensor) []float64 {
	switch x.DType() {
	case dtypes.Float64:
		return tensors.MustCopyFlatData[float64](x)
	case dtypes.Float32:
		f := tensors.MustCopyFlatData[float32](x)
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out
	}
	panic(fmt.Errorf("flat64: dtype %s", x.DType()))
}

// toDType converts a float tensor to dt (bool tensors are returned as they are).
func toDType(x *tensors.Tensor, dt dtypes.DType) *tensors.Tensor {
	if x == nil || x.DType() == dtypes.Bool || x.DType() == dt {
		return x
	}
	v := flat64(x)
	if dt == dtypes.Float64 {
		return tensors.FromFlatDataAndDimensions(v, x.Shape().Dimensions...)
	}
	f := make([]float32, len(v))
	for i, e := range v {
		f[i] = float32(e)
	}
	return tensors.FromFlatDataAndDimensions(f, x.Shape().Dimensions...)
}

// modernAttention runs an attention case through internal/commands/sdpa with SDPA and with flash.
func modernAttention(t *testing.T, backend backends.Backend, ts map[string]*tensors.Tensor, cfg map[string]any, dt dtypes.DType) map[string]*tensors.Tensor {
	t.Helper()
	in := map[string]*tensors.Tensor{}
	for _, n := range sdpa.InputNames() {
		if x := ts[n]; x != nil {
			in[n] = toDType(x, dt)
		}
	}
	o := sdpa.Config{WindowLeft: sdpa.Unbounded, WindowRight: sdpa.Unbounded, EnableGQA: true}
	o.IsCausal, _ = cfg["is_causal"].(bool)
	o.ALiBi, _ = cfg["alibi"].(bool)
	if s, ok := cfg["scale"].(float64); ok {
		o.Scale, o.ScaleSet = s, true
	}
	o.SoftCap, _ = cfg["softcap"].(float64)
	if l, ok := cfg["window_left"].(float64); ok {
		o.WindowLeft = int(l)
	}
	if r, ok := cfg["window_right"].(float64); ok {
		o.WindowRight = int(r)
	}
	o.RoPE, _ = cfg["rope"].(string)
	o.RoPETheta, _ = cfg["rope_theta"].(float64)
	if s := ts["sinks"]; s != nil {
		o.Sinks = toDType(s, dt)
	}
	res := map[string]*tensors.Tensor{}
	for _, flash := range []bool{false, true} {
		o.Flash, o.BlockQ, o.BlockK = flash, 4, 4 // several tiles at these sizes, few enough for XLA to compile quickly
		out, err := sdpa.Attention(backend, in, o)
		if err != nil {
			t.Fatalf("flash=%v: %v", flash, err)
		}
		res[map[bool]string{false: "sdpa", true: "flash"}[flash]] = out
	}
	return res
}

func modernRoPE(t *testing.T, backend backends.Backend, x *tensors.Tensor, cfg map[string]any, dt dtypes.DType) map[string]*tensors.Tensor {
	t.Helper()
	conv := mhalib.RoPEHalfSplit
	if cfg["convention"] == "interleaved" {
		conv = mhalib.RoPEInterleaved
	}
	out, err := MustNewExec(backend, func(x *Node) *Node {
		return mhalib.RoPE(x).Convention(conv).Theta(cfg["theta"].(float64)).
			RotaryDims(int(cfg["rotary_dims"].(float64))).Offset(int(cfg["offset"].(float64))).Done()
	}).Exec(toDType(x, dt))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*tensors.Tensor{"rope": out[0]}
}

func modernMLA(t *testing.T, backend backends.Backend, ts map[string]*tensors.Tensor, cfg map[string]any, dt dtypes.DType) map[string]*tensors.Tensor {
	t.Helper()
	n := func(k string) int { return int(cfg[k].(float64)) }
	mc := mhalib.MLAConfig{Heads: n("H"), HeadDim: n("dh"), RopeDim: n("dr"), ValueDim: n("dv"), Latent: n("dc"),
		QueryLatent: n("dcq"), RoPETheta: cfg["theta"].(float64)}
	causal := mhalib.NoCausal
	if cfg["causal"].(bool) {
		causal = mhalib.CausalTopLeft
	}
	res := map[string]*tensors.Tensor{}
	for _, absorbed := range []bool{false, true} {
		ctx := context.New()
		s := ctx.In("MultiHeadLatentAttention")
		for name, w := range ts {
			if scope, ok := strings.CutSuffix(name, ".weight"); ok {
				s.In(scope).VariableWithValue("weight", toDType(w, dt))
			}
		}
		out, err := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) *Node {
			return mhalib.MultiHeadLatentAttention(ctx, x, mc).Causal(causal).Absorbed(absorbed).Done()
		}).Exec(toDType(ts["x"], dt))
		if err != nil {
			t.Fatal(err)
		}
		res[map[bool]string{false: "explicit", true: "absorbed"}[absorbed]] = out[0]
	}
	return res
}
