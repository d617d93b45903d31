package minilm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/models/modelfiles"
)

// copyModel makes dir/ a copy of the model's pinned files (symlinks for the big one unless
// it is to be damaged).
func copyModel(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []modelfiles.Pinned{FileConfig(), FileTokenizer(), FileWeights()} {
		if err := os.Symlink(filepath.Join(src, p.Name), filepath.Join(dir, p.Name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLoadBadFiles: a missing, truncated or altered model file is one clear error naming the
// file and the fix, before anything is parsed.
func TestLoadBadFiles(t *testing.T) {
	src := modelDir(t)
	weights, err := os.ReadFile(filepath.Join(src, FileWeights().Name))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		damage func(dir string) error
		want   string
	}{
		{"missing weights", func(dir string) error { return os.Remove(filepath.Join(dir, FileWeights().Name)) }, "model.safetensors is missing"},
		{"missing tokenizer", func(dir string) error { return os.Remove(filepath.Join(dir, FileTokenizer().Name)) }, "tokenizer.json is missing"},
		{"truncated weights", func(dir string) error {
			p := filepath.Join(dir, FileWeights().Name)
			os.Remove(p)
			return os.WriteFile(p, weights[:len(weights)/2], 0o644)
		}, "model.safetensors is truncated: 45434188 bytes, want 90868376"},
		{"altered weights", func(dir string) error {
			p := filepath.Join(dir, FileWeights().Name)
			os.Remove(p)
			bad := append([]byte(nil), weights...)
			bad[len(bad)-1] ^= 1
			return os.WriteFile(p, bad, 0o644)
		}, "model.safetensors has the wrong sha256"},
		{"altered config", func(dir string) error {
			p := filepath.Join(dir, FileConfig().Name)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			os.Remove(p)
			return os.WriteFile(p, []byte(strings.Replace(string(data), "384", "385", 1)), 0o644)
		}, "config.json has the wrong sha256"},
		{"weights is a folder", func(dir string) error {
			p := filepath.Join(dir, FileWeights().Name)
			os.Remove(p)
			return os.Mkdir(p, 0o755)
		}, "model.safetensors is not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyModel(t, src)
			if err := c.damage(dir); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, "scripts/setup.sh --only minilm") ||
				strings.Contains(msg, "\n") || !errors.Is(err, modelfiles.ErrModelFile) {
				t.Errorf("error %q: want one line containing %q and the fix", msg, c.want)
			}
		})
	}
}

// TestLoadWeightsChecksNames: loadWeights refuses a checkpoint with a missing, unexpected or
// misshapen tensor, naming it (a tiny configuration, no model files needed).
func TestLoadWeightsChecksNames(t *testing.T) {
	c := Config{VocabSize: 5, HiddenSize: 4, NumHiddenLayers: 1, NumAttentionHeads: 2, IntermediateSize: 8,
		HiddenAct: "gelu", MaxPositionEmbeddings: 6, TypeVocabSize: 2, LayerNormEps: 1e-12}
	full := func() map[string]*tensors.Tensor {
		ts := map[string]*tensors.Tensor{}
		for name, dims := range expectedWeights(c) {
			n := 1
			for _, d := range dims {
				n *= d
			}
			ts[name] = tensors.FromFlatDataAndDimensions(make([]float32, n), dims...)
		}
		return ts
	}
	if err := loadWeights(context.New(), c, full(), "ok.safetensors"); err != nil {
		t.Fatalf("complete checkpoint: %v", err)
	}
	for _, bad := range []struct {
		name   string
		change func(ts map[string]*tensors.Tensor)
		want   string
	}{
		{"missing", func(ts map[string]*tensors.Tensor) { delete(ts, "encoder.layer.0.attention.self.key.weight") },
			"tensor encoder.layer.0.attention.self.key.weight is missing"},
		{"unexpected", func(ts map[string]*tensors.Tensor) {
			ts["encoder.layer.1.output.dense.bias"] = tensors.FromValue([]float32{1})
		},
			"unexpected tensor encoder.layer.1.output.dense.bias"},
		{"shape", func(ts map[string]*tensors.Tensor) {
			ts["encoder.layer.0.intermediate.dense.weight"] = tensors.FromFlatDataAndDimensions(make([]float32, 32), 4, 8)
		}, "tensor encoder.layer.0.intermediate.dense.weight has shape (Float32)[4 8], want (Float32)[8 4]"},
	} {
		ts := full()
		bad.change(ts)
		err := loadWeights(context.New(), c, ts, "bad.safetensors")
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want %q", bad.name, err, bad.want)
		}
	}
}
