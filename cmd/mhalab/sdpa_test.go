package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/torchio"
)

// sdpaFlags turns a parity/modern_gen.py configuration into `mhalab sdpa` flags.
func sdpaFlags(cfg map[string]any) []string {
	var a []string
	if cfg["is_causal"] == true {
		a = append(a, "--is-causal")
	}
	if s, ok := cfg["scale"].(float64); ok {
		a = append(a, "--scale", fmt.Sprint(s))
	}
	if cfg["Hq"] != cfg["Hkv"] {
		a = append(a, "--enable-gqa")
	}
	if l, ok := cfg["window_left"].(float64); ok {
		a = append(a, "--window-left", fmt.Sprint(int(l)))
	}
	if r, ok := cfg["window_right"].(float64); ok {
		a = append(a, "--window-right", fmt.Sprint(int(r)))
	}
	if cfg["alibi"] == true {
		a = append(a, "--alibi")
	}
	if c, ok := cfg["softcap"].(float64); ok {
		a = append(a, "--softcap", fmt.Sprint(c))
	}
	if r, ok := cfg["rope"].(string); ok {
		a = append(a, "--rope", r, "--rope-theta", fmt.Sprint(cfg["rope_theta"]))
	}
	return a
}

// TestSDPAContract runs `mhalab sdpa` on the PyTorch fixtures of parity/modern_gen.py (every
// attention case without sinks, which the command does not take), with and without --flash, on
// every backend: attn_output within 2× PyTorch's own float32 error + 8 ulps of PyTorch's float64.
func TestSDPAContract(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("..", "..", "parity", "testdata", "modern", "modern_*.inputs.safetensors"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	sort.Strings(inputs)
	names, _ := backendtest.Available()
	for _, backend := range names {
		for _, in := range inputs {
			name := strings.TrimSuffix(filepath.Base(in), ".inputs.safetensors")
			t.Run(backend+"/"+name, func(t *testing.T) {
				ref, err := torchio.ReadFile(strings.TrimSuffix(in, ".inputs.safetensors") + ".safetensors")
				if err != nil {
					t.Fatal(err)
				}
				var cfg map[string]any
				if err := json.Unmarshal([]byte(ref.Metadata["config"]), &cfg); err != nil {
					t.Fatal(err)
				}
				for _, flash := range []bool{false, true} {
					out := filepath.Join(t.TempDir(), "out.safetensors")
					args := append([]string{"sdpa", "--inputs", in, "--out", out, "--backend", backend}, sdpaFlags(cfg)...)
					if flash {
						args = append(args, "--flash")
					}
					code, stdout, stderr := runCLI(args...)
					if code != 0 {
						t.Fatalf("mhalab %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
					}
					if !strings.Contains(stdout, "attn_output") {
						t.Errorf("stdout %q", stdout)
					}
					res, err := torchio.ReadFile(out)
					if err != nil {
						t.Fatal(err)
					}
					got := res.Tensors["attn_output"]
					if got == nil || got.DType().String() != "Float32" {
						t.Fatalf("attn_output missing or not float32: %v", res.Tensors)
					}
					g := tensors.MustCopyFlatData[float32](got)
					want := tensors.MustCopyFlatData[float64](ref.Tensors["out64"])
					torch32 := tensors.MustCopyFlatData[float32](ref.Tensors["out32"])
					if len(g) != len(want) {
						t.Fatalf("attn_output shape %v, want %d values", got.Shape(), len(want))
					}
					errMax, torchErr, scale := 0.0, 0.0, 1.0
					for i := range want {
						errMax = math.Max(errMax, math.Abs(float64(g[i])-want[i]))
						torchErr = math.Max(torchErr, math.Abs(float64(torch32[i])-want[i]))
						scale = math.Max(scale, math.Abs(want[i]))
					}
					if bound := 2*torchErr + 8*math.Pow(2, -23)*scale; !(errMax <= bound) {
						t.Errorf("flash=%v: max |mhalab − torch float64| = %.3g > %.3g", flash, errMax, bound)
					}
				}
			})
		}
	}
}

// Bad inputs and flags: one line on stderr naming the problem, exit 1 (2 for usage errors).
func TestSDPAErrors(t *testing.T) {
	dir := t.TempDir()
	f32 := func(dims ...int) *tensors.Tensor {
		n := 1
		for _, d := range dims {
			n *= d
		}
		return tensors.FromFlatDataAndDimensions(make([]float32, n), dims...)
	}
	write := func(name string, ts map[string]*tensors.Tensor) string {
		p := filepath.Join(dir, name)
		if err := torchio.WriteFile(p, ts, nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.safetensors", map[string]*tensors.Tensor{"query": f32(1, 4, 3, 8), "key": f32(1, 2, 5, 8), "value": f32(1, 2, 5, 6)})
	mha := write("mha.safetensors", map[string]*tensors.Tensor{"query": f32(1, 2, 3, 8), "key": f32(1, 2, 5, 8), "value": f32(1, 2, 5, 6)})
	notMultiple := write("nm.safetensors", map[string]*tensors.Tensor{"query": f32(1, 4, 3, 8), "key": f32(1, 3, 5, 8), "value": f32(1, 3, 5, 6)})
	badV := write("badv.safetensors", map[string]*tensors.Tensor{"query": f32(1, 2, 3, 8), "key": f32(1, 2, 5, 8), "value": f32(1, 2, 4, 6)})
	badK := write("badk.safetensors", map[string]*tensors.Tensor{"query": f32(1, 2, 3, 8), "key": f32(1, 2, 5, 7), "value": f32(1, 2, 5, 6)})
	intMask := write("intmask.safetensors", map[string]*tensors.Tensor{"query": f32(1, 2, 3, 8), "key": f32(1, 2, 5, 8), "value": f32(1, 2, 5, 6),
		"attn_mask": tensors.FromFlatDataAndDimensions(make([]int32, 15), 3, 5)})
	badMask := write("badmask.safetensors", map[string]*tensors.Tensor{"query": f32(1, 2, 3, 8), "key": f32(1, 2, 5, 8), "value": f32(1, 2, 5, 6),
		"attn_mask": tensors.FromFlatDataAndDimensions(make([]bool, 12), 3, 4)})
	odd := write("odd.safetensors", map[string]*tensors.Tensor{"query": f32(1, 2, 3, 7), "key": f32(1, 2, 5, 7), "value": f32(1, 2, 5, 6)})
	f64 := write("f64.safetensors", map[string]*tensors.Tensor{"query": tensors.FromFlatDataAndDimensions(make([]float64, 48), 1, 2, 3, 8),
		"key": f32(1, 2, 5, 8), "value": f32(1, 2, 5, 6)})
	extra := write("extra.safetensors", map[string]*tensors.Tensor{"query": f32(1, 2, 3, 8), "key": f32(1, 2, 5, 8), "value": f32(1, 2, 5, 6), "attn-mask": f32(3, 5)})
	noValue := write("novalue.safetensors", map[string]*tensors.Tensor{"query": f32(1, 2, 3, 8), "key": f32(1, 2, 5, 8)})
	out := filepath.Join(dir, "out.safetensors")
	cmd := func(in string, extra ...string) []string {
		return append([]string{"sdpa", "--inputs", in, "--out", out, "--backend", "go"}, extra...)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ok gqa", cmd(good, "--enable-gqa", "--rope", "half", "--window-left", "2", "--alibi", "--softcap", "5"), 0, ""},
		{"Hq != Hkv without --enable-gqa", cmd(good), 1, "query has 4 heads, key and value 2 (query [1 4 3 8], key [1 2 5 8]): pass --enable-gqa"},
		{"Hq not a multiple of Hkv", cmd(notMultiple, "--enable-gqa"), 1, "query has 4 heads, not a multiple of key's 3"},
		{"value length", cmd(badV), 1, "value shape [1 2 4 6] does not fit key shape [1 2 5 8]"},
		{"key width", cmd(badK), 1, "key shape [1 2 5 7] does not fit query shape [1 2 3 8]"},
		{"mask dtype", cmd(intMask), 1, "attn_mask has dtype Int32: want bool (true = take part) or the query's float dtype"},
		{"mask shape", cmd(badMask), 1, "attn_mask shape [3 4] does not broadcast to [B, Hq, Lq, S] = [1 2 3 5]"},
		{"negative window left", cmd(mha, "--window-left", "-1"), 1, "--window-left -1: a window side must be >= 0"},
		{"negative window right", cmd(mha, "--window-right", "-3"), 1, "--window-right -3: a window side must be >= 0"},
		{"rope odd E", cmd(odd, "--rope", "interleaved"), 1, "rope needs an even head size, query shape [1 2 3 7] has E = 7"},
		{"float64 inputs", cmd(f64), 1, "query has dtype Float64: want float32"},
		{"unknown tensor", cmd(extra), 1, `unknown tensor(s) ["attn-mask"]`},
		{"no value", cmd(noValue), 1, `no tensor "value" in the inputs`},
		{"softcap 0", cmd(mha, "--softcap", "0"), 1, "--softcap 0: want a positive cap"},
		{"missing file", cmd(filepath.Join(dir, "nope.safetensors")), 1, "--inputs:"},
		{"no --out", []string{"sdpa", "--inputs", mha}, 2, "--inputs and --out are required"},
		{"bad --rope", cmd(mha, "--rope", "spiral"), 2, `--rope "spiral": want half or interleaved`},
		{"--rope-theta without --rope", cmd(mha, "--rope-theta", "5"), 2, "--rope-theta needs --rope"},
		{"bad --window-left", cmd(mha, "--window-left", "x"), 2, ""},
	} {
		code, _, stderr := runCLI(c.args...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if c.code == 0 {
			if code != 0 {
				t.Errorf("%s: exit %d, stderr %q", c.name, code, stderr)
			}
			continue
		}
		maxLines := 1
		if c.code == 2 {
			maxLines = 2 // the usage line pointing to -h
		}
		if code != c.code || !strings.HasPrefix(stderr, "mhalab sdpa: ") || !strings.Contains(lines[0], c.want) || len(lines) > maxLines {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %d line(s) containing %q", c.name, code, stderr, c.code, maxLines, c.want)
		}
	}
}
