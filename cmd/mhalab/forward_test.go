package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/parity"
	"github.com/mhalab/mhalab/torchio"
)

// forwardReferences are the references that have `mhalab forward` files: from $MHALAB_PARITY_DIR
// (`make parity`: every nn.MultiheadAttention case, state_dicts saved with
// safetensors.torch.save_file) or the committed fixtures.
func forwardReferences(t *testing.T) []*parity.Reference {
	t.Helper()
	dir := os.Getenv("MHALAB_PARITY_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "parity", "testdata")
	}
	refs, err := parity.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*parity.Reference
	for _, r := range refs {
		if _, _, ok := r.ForwardFiles(); ok && r.Config.Kind == "mha" {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no references with forward files in %s", dir)
	}
	return out
}

// forwardArgs are the flags that reproduce the reference's nn.MultiheadAttention call.
func forwardArgs(r *parity.Reference, out, backend string) []string {
	c := r.Config
	w, in, _ := r.ForwardFiles()
	args := []string{"forward", "--weights", w, "--inputs", in, "--out", out, "--num-heads", fmt.Sprint(c.H), "--backend", backend}
	for _, f := range []struct {
		on   bool
		flag string
	}{{c.BatchFirst, "--batch-first"}, {c.AddZeroAttn, "--add-zero-attn"}, {c.NeedWeights, "--need-weights"},
		{c.NeedWeights && c.AverageAttnWeights, "--average-attn-weights"}, {c.IsCausal, "--is-causal"}} {
		if f.on {
			args = append(args, f.flag)
		}
	}
	return args
}

// TestForwardParity runs `mhalab forward` on state_dicts saved straight from PyTorch and compares
// attn_output (and attn_output_weights) with PyTorch under the parity tolerance.
func TestForwardParity(t *testing.T) {
	names, _ := backendtest.Available()
	for _, ref := range forwardReferences(t) {
		for _, backend := range names {
			t.Run(ref.Config.Name+"/"+backend, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out.safetensors")
				var stdout, stderr bytes.Buffer
				args := forwardArgs(ref, out, backend)
				if code := run(args, &stdout, &stderr); code != 0 {
					t.Fatalf("mhalab %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
				}
				f, err := torchio.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				wantNames := []string{"attn_output"}
				if ref.Config.NeedWeights {
					wantNames = append(wantNames, "attn_output_weights")
				}
				if len(f.Tensors) != len(wantNames) {
					t.Errorf("output has %v, want %v", f.Names, wantNames)
				}
				for _, name := range wantNames {
					res, err := ref.Check(name, f.Tensors[name])
					if err != nil {
						t.Fatal(err)
					}
					if !res.OK {
						t.Errorf("%s", res)
					}
				}
			})
		}
	}
}

// forwardFixture returns copies of the weights and inputs of a committed forward fixture.
func forwardFixture(t *testing.T, name string) (w, in map[string]*tensors.Tensor) {
	t.Helper()
	base := filepath.Join("..", "..", "parity", "testdata", name)
	wf, err := torchio.ReadFile(base + ".weights.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	inf, err := torchio.ReadFile(base + ".inputs.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	return wf.Tensors, inf.Tensors
}

// TestForwardErrors: every mismatch of names, shapes or dtypes, and every bad file, exits non-zero
// with a message naming the problem.
func TestForwardErrors(t *testing.T) {
	// mha_everything: E=8, kdim=6, vdim=7, 2 heads, seq-first, Lq=3, Lk=5, B=2, bias_k/v, float masks.
	w, in := forwardFixture(t, "mha_everything")
	dir := t.TempDir()
	write := func(name string, ts map[string]*tensors.Tensor) string {
		p := filepath.Join(dir, name)
		if err := torchio.WriteFile(p, ts, nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodW, goodIn := write("w.safetensors", w), write("in.safetensors", in)
	edit := func(ts map[string]*tensors.Tensor, fn func(m map[string]*tensors.Tensor)) map[string]*tensors.Tensor {
		m := maps.Clone(ts)
		fn(m)
		return m
	}
	zeros := func(dims ...int) *tensors.Tensor {
		n := 1
		for _, d := range dims {
			n *= d
		}
		return tensors.FromFlatDataAndDimensions(make([]float32, n), dims...)
	}
	truncated := filepath.Join(dir, "truncated.safetensors")
	data, _ := os.ReadFile(goodW)
	if err := os.WriteFile(truncated, data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.safetensors")
	base := func(wp, ip string, extra ...string) []string {
		return append([]string{"forward", "--weights", wp, "--inputs", ip, "--out", out, "--num-heads", "2", "--backend", "go"}, extra...)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ok", base(goodW, goodIn, "--add-zero-attn"), 0, ""},
		{"no --weights", []string{"forward", "--inputs", goodIn, "--out", out, "--num-heads", "2"}, 2, "--weights, --inputs and --out are required"},
		{"no --num-heads", []string{"forward", "--weights", goodW, "--inputs", goodIn, "--out", out}, 2, "--num-heads is required"},
		{"--num-heads 0", base(goodW, goodIn, "--num-heads", "0"), 1, "--num-heads 0: want a positive number of heads"},
		{"--num-heads -2", base(goodW, goodIn, "--num-heads", "-2"), 1, "--num-heads -2: want a positive number of heads"},
		{"--max-memory too small", base(goodW, goodIn, "--max-memory", "1KiB"), 1, "more than --max-memory 1.0 KiB"},
		{"average without need", base(goodW, goodIn, "--average-attn-weights"), 2, "needs --need-weights"},
		{"unknown backend", base(goodW, goodIn, "--backend", "tpu"), 2, "unknown backend"},
		{"stray argument", base(goodW, goodIn, "extra"), 2, "unexpected argument"},
		{"missing weights file", base(filepath.Join(dir, "nope.safetensors"), goodIn), 1, "no such file"},
		{"truncated weights", base(truncated, goodIn), 1, "--weights: torchio: "},
		{"inputs file is weights", base(goodW, goodW), 1, "unknown tensors"},
		{"prefixed state_dict", base(write("wp.safetensors", edit(w, func(m map[string]*tensors.Tensor) {
			m["self_attn.bias_k"] = m["bias_k"]
		})), goodIn), 1, "self_attn.bias_k"},
		{"bias_k alone", base(write("wk.safetensors", edit(w, func(m map[string]*tensors.Tensor) { delete(m, "bias_v") })), goodIn), 1, "add_bias_kv sets both"},
		{"bias_k wrong shape", base(write("wb.safetensors", edit(w, func(m map[string]*tensors.Tensor) { m["bias_k"] = zeros(1, 1, 7) })), goodIn), 1, "bias_k"},
		{"float64 weights", base(write("w64.safetensors", edit(w, func(m map[string]*tensors.Tensor) {
			for k, v := range m {
				m[k] = tensors.FromFlatDataAndDimensions(make([]float64, v.Size()), v.Shape().Dimensions...)
			}
		})), goodIn), 1, "the weights are Float64"},
		{"no value", base(goodW, write("nv.safetensors", edit(in, func(m map[string]*tensors.Tensor) { delete(m, "value") }))), 1, "no value tensor"},
		{"float64 query", base(goodW, write("q64.safetensors", edit(in, func(m map[string]*tensors.Tensor) {
			m["query"] = tensors.FromFlatDataAndDimensions(make([]float64, 48), 3, 2, 8)
		}))), 1, "query has shape (Float64)[3 2 8]: want float32"},
		{"wrong embed dim", base(goodW, write("e.safetensors", edit(in, func(m map[string]*tensors.Tensor) { m["query"] = zeros(3, 2, 9) }))), 1, "embed_dim 8"},
		{"wrong kdim", base(goodW, write("k.safetensors", edit(in, func(m map[string]*tensors.Tensor) { m["key"] = zeros(5, 2, 8) }))), 1, "kdim 6"},
		{"layout flipped", base(goodW, goodIn, "--batch-first"), 1, "batch sizes"},
		{"key/value lengths", base(goodW, write("l.safetensors", edit(in, func(m map[string]*tensors.Tensor) { m["value"] = zeros(4, 2, 7) }))), 1, "key has 5 positions, value 4"},
		{"rank 4 query", base(goodW, write("r.safetensors", edit(in, func(m map[string]*tensors.Tensor) { m["query"] = zeros(1, 3, 2, 8) }))), 1, "want rank 3"},
		{"attn_mask shape", base(goodW, write("am.safetensors", edit(in, func(m map[string]*tensors.Tensor) { m["attn_mask"] = zeros(3, 4) }))), 1, "attn_mask has shape"},
		{"attn_mask int64", base(goodW, write("ai.safetensors", edit(in, func(m map[string]*tensors.Tensor) {
			m["attn_mask"] = tensors.FromFlatDataAndDimensions(make([]int64, 15), 3, 5)
		}))), 1, "want bool or uint8"},
		{"key_padding_mask shape", base(goodW, write("kp.safetensors", edit(in, func(m map[string]*tensors.Tensor) { m["key_padding_mask"] = zeros(5, 2) }))), 1, "key_padding_mask has shape"},
		{"heads do not divide", base(goodW, goodIn, "--num-heads", "3"), 1, "does not divide embed_dim 8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(c.args, &stdout, &stderr)
			if code != c.code || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("mhalab %s:\nexit %d (want %d), stderr:\n%s\nwant it to contain %q", strings.Join(c.args, " "), code, c.code, stderr.String(), c.want)
			}
		})
	}
}

// TestForwardUnbatched: PyTorch's unbatched form (query [Lq, E], key_padding_mask [Lk]) gives
// batch element 0 of the batched call.
func TestForwardUnbatched(t *testing.T) {
	// mha_self: batch_first, E=8, 2 heads, B=2, L=4; add a key padding mask.
	w, in := forwardFixture(t, "mha_self")
	dir := t.TempDir()
	pad := tensors.FromFlatDataAndDimensions([]bool{false, true, false, false, false, false, true, false}, 2, 4)
	in["key_padding_mask"] = pad
	first := func(x *tensors.Tensor) *tensors.Tensor { // [2, L, D] → [L, D]
		d := x.Shape().Dimensions
		flat := tensors.MustCopyFlatData[float32](x)
		return tensors.FromFlatDataAndDimensions(flat[:d[1]*d[2]], d[1], d[2])
	}
	unb := map[string]*tensors.Tensor{"query": first(in["query"]), "key": first(in["key"]), "value": first(in["value"]),
		"key_padding_mask": tensors.FromFlatDataAndDimensions([]bool{false, true, false, false}, 4)}
	paths := map[string]string{}
	for name, ts := range map[string]map[string]*tensors.Tensor{"w": w, "batched": in, "unbatched": unb} {
		paths[name] = filepath.Join(dir, name+".safetensors")
		if err := torchio.WriteFile(paths[name], ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	outs := map[string]*torchio.File{}
	for _, name := range []string{"batched", "unbatched"} {
		out := filepath.Join(dir, name+".out.safetensors")
		var stdout, stderr bytes.Buffer
		args := []string{"forward", "--weights", paths["w"], "--inputs", paths[name], "--out", out, "--num-heads", "2",
			"--batch-first", "--need-weights", "--backend", "go"}
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr.String())
		}
		f, err := torchio.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		outs[name] = f
	}
	b, u := outs["batched"].Tensors, outs["unbatched"].Tensors
	if got := fmt.Sprint(u["attn_output"].Shape().Dimensions, u["attn_output_weights"].Shape().Dimensions); got != "[4 8] [2 4 4]" {
		t.Fatalf("unbatched shapes %s, want [4 8] [2 4 4]", got)
	}
	bo, uo := tensors.MustCopyFlatData[float32](b["attn_output"]), tensors.MustCopyFlatData[float32](u["attn_output"])
	for i, v := range uo {
		if d := v - bo[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("attn_output[%d]: unbatched %g, batched %g", i, v, bo[i])
		}
	}
}
