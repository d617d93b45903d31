package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/cmd/mhalab/internal/badinputs"
	"github.com/mhalab/mhalab/torchio"
)

// copyFile copies src to dst (in a test's temporary folder).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOutputIsNotAnInput: a command whose output is one of its input files — the same path,
// another spelling, a symbolic link or a hard link — refuses before computing anything, with one
// line naming both flags, exit 1, and the file is left as it was.
func TestOutputIsNotAnInput(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	copyFile(t, fixtureWeights, p("w.safetensors"))
	copyFile(t, fixtureInputs, p("in.safetensors"))
	f32 := func(dims ...int) *tensors.Tensor {
		n := 1
		for _, d := range dims {
			n *= d
		}
		return tensors.FromFlatDataAndDimensions(make([]float32, n), dims...)
	}
	if err := torchio.WriteFile(p("s.safetensors"), map[string]*tensors.Tensor{
		"query": f32(1, 2, 3, 8), "key": f32(1, 2, 5, 8), "value": f32(1, 2, 5, 6)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p("old.json"), []byte(`{"cases": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	model := p("model")
	if err := os.Mkdir(model, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "tokenizer.json", "model.safetensors"} {
		if err := os.WriteFile(filepath.Join(model, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("w.safetensors", p("link-to-w.safetensors")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Link(p("in.safetensors"), p("hard-in.safetensors")); err != nil {
		t.Skip("no hard links here:", err)
	}
	if err := os.Link(p("s.safetensors"), p("hard-s.safetensors")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(model, "tokenizer.json"), p("page.html")); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, name := range []string{"w.safetensors", "in.safetensors", "s.safetensors", "old.json", "model/tokenizer.json"} {
		before[name], _ = os.ReadFile(p(name))
	}

	fwd := func(out string) []string {
		return []string{"forward", "--weights", p("w.safetensors"), "--inputs", p("in.safetensors"), "--out", out, "--num-heads", "2", "--backend", "go"}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"forward --out = --weights", fwd(p("w.safetensors")),
			"--out " + p("w.safetensors") + " is the same file as --weights " + p("w.safetensors")},
		{"forward --out = --inputs", fwd(p("in.safetensors")),
			"--out " + p("in.safetensors") + " is the same file as --inputs " + p("in.safetensors")},
		{"forward --out spelled otherwise", fwd(p("sub/../w.safetensors")),
			"--out " + p("sub/../w.safetensors") + " is the same file as --weights " + p("w.safetensors")},
		{"forward --out a symbolic link to --weights", fwd(p("link-to-w.safetensors")),
			"--out " + p("link-to-w.safetensors") + " is the same file as --weights " + p("w.safetensors")},
		{"forward --out a hard link to --inputs", fwd(p("hard-in.safetensors")),
			"--out " + p("hard-in.safetensors") + " is the same file as --inputs " + p("in.safetensors")},
		{"forward --out a folder", fwd(p("sub")), "--out " + p("sub") + " is a folder: give a file name"},
		{"forward --out in a missing folder", fwd(p("no/such/out.safetensors")), "--out " + p("no/such/out.safetensors") + ": its folder " + p("no/such") + " does not exist"},
		{"sdpa --out = --inputs", []string{"sdpa", "--inputs", p("s.safetensors"), "--out", p("s.safetensors"), "--backend", "go"},
			"--out " + p("s.safetensors") + " is the same file as --inputs " + p("s.safetensors")},
		{"sdpa --out a hard link to --inputs", []string{"sdpa", "--inputs", p("s.safetensors"), "--out", p("hard-s.safetensors"), "--backend", "go"},
			"--out " + p("hard-s.safetensors") + " is the same file as --inputs " + p("s.safetensors")},
		{"bench --json = --compare", []string{"bench", "--json", p("old.json"), "--compare", p("old.json")},
			"--json " + p("old.json") + " is the same file as --compare " + p("old.json")},
		{"bench --json = --torch-script", []string{"bench", "--json", p("s.safetensors"), "--torch-script", p("hard-s.safetensors")},
			"--json " + p("s.safetensors") + " is the same file as --torch-script " + p("hard-s.safetensors")},
		{"bench --json = --llama-python", []string{"bench", "--json", p("old.json"), "--llama-python", p("old.json")},
			"--json " + p("old.json") + " is the same file as --llama-python " + p("old.json")},
		{"attention --html = a model file", []string{"attention", "--model", model, "--html", filepath.Join(model, "tokenizer.json"), "x"},
			"--html " + filepath.Join(model, "tokenizer.json") + " is the same file as --model's tokenizer.json " + filepath.Join(model, "tokenizer.json")},
		{"attention --html a link to a model file", []string{"attention", "--model", model, "--html", p("page.html"), "x"},
			"--html " + p("page.html") + " is the same file as --model's tokenizer.json " + filepath.Join(model, "tokenizer.json")},
	} {
		code, stdout, stderr := runCLI(c.args...)
		lines := badinputs.Lines(stderr)
		if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], c.want) || strings.Contains(stderr, "mhalab: backend") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 before the backend starts, one line containing %q", c.name, code, stdout, stderr, c.want)
		}
	}
	for name, data := range before {
		if got, _ := os.ReadFile(p(name)); !bytes.Equal(got, data) {
			t.Errorf("%s was changed", name)
		}
	}
	if st, err := os.Lstat(p("link-to-w.safetensors")); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link-to-w.safetensors is no longer a symbolic link (%v)", err)
	}
}

// TestNonFiniteOutputsAreReported: all-NaN inputs give NaN outputs (as PyTorch's); the file is
// written and the exit status is 0, and stderr says how many outputs are not finite and where
// the first is.
func TestNonFiniteOutputsAreReported(t *testing.T) {
	dir := t.TempDir()
	nan := func(x *tensors.Tensor) *tensors.Tensor {
		n := x.Shape().Size()
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(math.NaN())
		}
		return tensors.FromFlatDataAndDimensions(data, x.Shape().Dimensions...)
	}
	in, err := torchio.ReadFile(fixtureInputs)
	if err != nil {
		t.Fatal(err)
	}
	in.Tensors["query"] = nan(in.Tensors["query"])
	nanIn := filepath.Join(dir, "nan.inputs.safetensors")
	if err := torchio.WriteFile(nanIn, in.Tensors, nil); err != nil {
		t.Fatal(err)
	}
	q := tensors.FromFlatDataAndDimensions(make([]float32, 2*3*8), 1, 2, 3, 8)
	kv := tensors.FromFlatDataAndDimensions(make([]float32, 2*5*8), 1, 2, 5, 8)
	sdpaIn := filepath.Join(dir, "nan.sdpa.safetensors")
	if err := torchio.WriteFile(sdpaIn, map[string]*tensors.Tensor{"query": nan(q), "key": kv, "value": kv}, nil); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.safetensors")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"forward", "--weights", fixtureWeights, "--inputs", nanIn, "--out", out, "--num-heads", "2", "--backend", "go"},
			"mhalab forward: warning: attn_output has 64 non-finite values (NaN or ±Inf) of 64, the first at [0 0 0]; --inputs query has 64 of 64"},
		{[]string{"sdpa", "--inputs", sdpaIn, "--out", out, "--backend", "go"},
			"mhalab sdpa: warning: attn_output has 48 non-finite values (NaN or ±Inf) of 48, the first at [0 0 0 0]; --inputs query has 48 of 48"},
	} {
		os.Remove(out)
		code, _, stderr := runCLI(c.args...)
		if _, err := os.Stat(out); code != 0 || err != nil || !strings.Contains(stderr, c.want+"\n") {
			t.Errorf("mhalab %s: exit %d (written: %v), stderr %q; want exit 0, the file, and the line %q", c.args[0], code, err == nil, stderr, c.want)
		}
	}
}
