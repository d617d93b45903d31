package minilm

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/torchio"
)

// The reference (testdata/reference.safetensors, gen_fixture.py) is transformers run in float64
// and rounded to float32; next to each sentence's values it stores transformers' own float32
// error against that reference, per layer (err32). mhalab's float32 encoder is held to
//
//	|mhalab − ref64| ≤ parityFactor · err32(layer) + parityFloor
//
// i.e. within a few times what PyTorch's float32 itself is off by on the same layer. Measured
// (go test -run 'TestParity' -v ./models/minilm/): the pure-Go backend stays within 2.6×
// err32, XLA CPU within 5.5× — its Erf (inside GELU) is off by up to 2e-7 where Go's math is
// off by 5e-8, and 1 + erf(x/√2) loses those bits to cancellation for negative x. Real
// mistakes are hundreds to thousands of times the bound (TestParityCatchesBugs: LayerNorm eps
// 1e-5 instead of 1e-12, GELU's tanh approximation). parityFloor covers a layer where
// PyTorch's float32 happens to be exact (err32 = 0).
const (
	parityFactor = 10
	parityFloor  = 1e-6
)

// referenceDir is the folder of the references: testdata (the committed fixture), or
// $MHALAB_MINILM_REFERENCE when set (make parity-minilm writes fresh ones there with the pinned
// transformers and runs these tests on them).
func referenceDir(t *testing.T) string {
	if d := os.Getenv("MHALAB_MINILM_REFERENCE"); d != "" {
		t.Logf("references from $MHALAB_MINILM_REFERENCE = %s", d)
		return d
	}
	return "testdata"
}

var (
	loadOnce  sync.Once
	loadModel *Model
	loadErr   error
)

// testModel loads the installed model once per test binary (or skips, see modelDir).
func testModel(t *testing.T) *Model {
	t.Helper()
	dir := modelDir(t)
	loadOnce.Do(func() { loadModel, loadErr = Load(dir) })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loadModel
}

type reference struct {
	file     *torchio.File
	detail   []string
	embed    []string
	embedLen []int
}

func readReference(t *testing.T) *reference {
	t.Helper()
	f, err := torchio.ReadFile(filepath.Join(referenceDir(t), "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	r := &reference{file: f}
	for key, dst := range map[string]any{"detail_sentences": &r.detail, "embed_sentences": &r.embed, "embed_lengths": &r.embedLen} {
		if err := json.Unmarshal([]byte(f.Metadata[key]), dst); err != nil {
			t.Fatalf("reference metadata %s: %v", key, err)
		}
	}
	return r
}

func (r *reference) floats(t *testing.T, name string) []float64 {
	t.Helper()
	ts, ok := r.file.Tensors[name]
	if !ok {
		t.Fatalf("reference has no tensor %s", name)
	}
	var out []float64
	switch ts.DType().String() {
	case "Float32":
		for _, v := range tensors.MustCopyFlatData[float32](ts) {
			out = append(out, float64(v))
		}
	case "Float64":
		out = tensors.MustCopyFlatData[float64](ts)
	case "Int32":
		for _, v := range tensors.MustCopyFlatData[int32](ts) {
			out = append(out, float64(v))
		}
	default:
		t.Fatalf("reference %s: dtype %s", name, ts.DType())
	}
	return out
}

// maxAbsDiff returns max |a − b| and its index.
func maxAbsDiff(a []float32, b []float64) (float64, int) {
	worst, at := 0.0, -1
	for i := range a {
		if d := math.Abs(float64(a[i]) - b[i]); d > worst || math.IsNaN(d) {
			worst, at = d, i
			if math.IsNaN(d) {
				return math.Inf(1), i
			}
		}
	}
	return worst, at
}

// parityCheck runs sentence i of the reference alone and compares the hidden states and
// attention weights of every layer with transformers'. It returns the worst ratio
// max|Δ| / bound over layers (≤ 1 passes) and a description of where it is; log receives
// one line per layer.
func parityCheck(t *testing.T, m *Model, backend backends.Backend, ref *reference, i int, log func(string)) (worst float64, where string) {
	t.Helper()
	s := ref.detail[i]
	enc, _, err := m.Encode([]string{s}, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := ref.floats(t, fmt.Sprintf("s%d.ids", i))
	if len(wantIDs) != enc[0].Len() {
		t.Fatalf("sentence %d: %d tokens, want %d", i, enc[0].Len(), len(wantIDs))
	}
	for j, id := range enc[0].IDs {
		if float64(id) != wantIDs[j] {
			t.Fatalf("sentence %d: ids %v, want %v", i, enc[0].IDs, wantIDs)
		}
	}
	out, err := m.Run(backend, enc, true)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Finalize()
	check := func(what string, got []*tensors.Tensor, name string) {
		want := ref.floats(t, fmt.Sprintf("s%d.%s", i, name))
		err32 := ref.floats(t, fmt.Sprintf("s%d.err32.%s", i, name))
		per := len(want) / len(got)
		for l, g := range got {
			flat := tensors.MustCopyFlatData[float32](g)
			d, at := maxAbsDiff(flat, want[l*per:(l+1)*per])
			bound := parityFactor*err32[l] + parityFloor
			log(fmt.Sprintf("sentence %d (L=%d) %s %d: max |Δ| %.2e (transformers float32: %.2e, bound %.2e)", i, enc[0].Len(), what, l, d, err32[l], bound))
			if r := d / bound; r > worst {
				worst = r
				where = fmt.Sprintf("sentence %d %q %s %d: max |Δ| %.3g at flat index %d (got %g, want %g), bound %.3g",
					i, s, what, l, d, at, flat[at], want[l*per+at], bound)
			}
		}
	}
	check("hidden state", out.Hidden, "hidden")
	check("attention layer", out.Attentions, "attn")
	return worst, where
}

// TestParityWithTransformers: the hidden state after the embeddings and after every layer, and
// the attention weights of every layer and head, equal transformers' (eager attention) for
// sentences of 8, 13 and 31 tokens, on every backend.
func TestParityWithTransformers(t *testing.T) {
	m := testModel(t)
	ref := readReference(t)
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for i := range ref.detail {
			worst, where := parityCheck(t, m, backend, ref, i, func(s string) { t.Log(s) })
			if worst > 1 {
				t.Errorf("%s (%.1f× the bound)", where, worst)
			}
		}
	})
}

// TestParityCatchesBugs: the tolerance is tight enough to see real mistakes. Each mutant —
// LayerNorm eps 1e-5 (PyTorch's default) instead of the config's 1e-12, GELU's tanh
// approximation instead of erf — must fail the check above on the pure-Go backend.
func TestParityCatchesBugs(t *testing.T) {
	m := testModel(t)
	ref := readReference(t)
	backend, err := backendtest.Get("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, mutant := range []struct {
		name   string
		mutate func(c *Config)
	}{
		{"LayerNorm eps 1e-5", func(c *Config) { c.LayerNormEps = 1e-5 }},
		{"GELU tanh approximation", func(c *Config) { c.HiddenAct = "gelu_tanh_test_mutant" }},
	} {
		mm := *m
		mutant.mutate(&mm.Config)
		mm.execs = map[execKey]*context.Exec{}
		worst, where := parityCheck(t, &mm, backend, ref, 1, func(string) {})
		t.Logf("%s: worst %.0f× the bound (%s)", mutant.name, worst, where)
		if worst <= 1 {
			t.Errorf("%s: the parity check did not notice (worst %.2f× the bound)", mutant.name, worst)
		}
	}
}
