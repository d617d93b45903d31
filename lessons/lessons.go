// Package lessons is the catalogue of mhalab's classroom exercises and the pristine copy of the
// files a student must not change: each exercise's grader, the files given with it, the graders'
// helper package and the PyTorch fixtures. The lesson runner (internal/lessonrun, behind
// `mhalab lessons`) restores those files from here before it grades, so editing a grader cannot
// pass an exercise, and restores a stub for `mhalab lessons reset`.
//
// Each exercise is a Go package lessons/NN_name/ with
//
//	README.md          goal, formula, shapes, what the grader checks
//	hint.md            two or three guiding questions
//	<name>.go          the stub with a // TODO: the student's file
//	<name>_test.go     the grader (build tag lessons)
//
// and its reference solution lives apart, in lessons/solutions/files/NN_name/<name>_solution.go
// (package solutions embeds them; student copies leave them out). Forbidden and Allowed say, per
// exercise, what the graded files may not use. Manifest holds the git blob hash of every embedded
// file; `go generate ./lessons` rewrites it after a maintainer changes one (TestManifest checks).
package lessons

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

//go:generate go run ./internal/genmanifest

// Exercise describes one exercise. Paths are relative to the lessons folder.
type Exercise struct {
	Number   int
	Dir      string   // "01_linear"
	Title    string   // one line
	File     string   // the file the student edits: the stub, e.g. "linear.go"
	Given    []string // other files that come with the exercise and are not to be edited
	Grader   string   // "linear_test.go"
	Solution string   // "linear_solution.go", in lessons/solutions/files/<Dir>/
	Notebook string   // the notebook that tells the story of the concept
}

// Exercises returns the exercises in order, one concept each: a fresh copy.
func Exercises() []Exercise {
	out := make([]Exercise, len(exercises))
	for i, e := range exercises {
		e.Given = slices.Clone(e.Given)
		out[i] = e
	}
	return out
}

// Manifest returns a fresh copy of the git blob hash (`git hash-object FILE`) of every embedded
// file of the lessons folder, by path ("01_linear/linear.go"), so that a pristine copy can be
// told from an edited one.
func Manifest() map[string]string { return maps.Clone(manifest) }

// ManifestHash returns the git blob hash of one embedded file of the lessons folder, and whether
// it is one.
func ManifestHash(name string) (hash string, ok bool) {
	hash, ok = manifest[name]
	return hash, ok
}

var exercises = []Exercise{
	{1, "01_linear", "Linear projection, PyTorch layout", "linear.go", nil, "linear_test.go", "linear_solution.go", "notebooks/01_qkv_projection.ipynb"},
	{2, "02_xavier", "Xavier-uniform initialisation", "xavier.go", nil, "xavier_test.go", "xavier_solution.go", "notebooks/01_qkv_projection.ipynb"},
	{3, "03_heads", "Split and merge heads", "heads.go", nil, "heads_test.go", "heads_solution.go", "notebooks/02_heads.ipynb"},
	{4, "04_uneven_heads", "Uneven heads (440 = 4×100 + 40)", "uneven.go", nil, "uneven_test.go", "uneven_solution.go", "notebooks/02_heads.ipynb"},
	{5, "05_sdpa", "Scaled dot-product attention, the right scale", "sdpa.go", nil, "sdpa_test.go", "sdpa_solution.go", "notebooks/03_sdpa_masks.ipynb"},
	{6, "06_masks", "Masks: causal, key padding, fully masked rows → 0", "masks.go", nil, "masks_test.go", "masks_solution.go", "notebooks/03_sdpa_masks.ipynb"},
	{7, "07_mha", "Assemble multi-head attention (self and cross)", "mha.go", nil, "mha_test.go", "mha_solution.go", "notebooks/04_mha.ipynb"},
	{8, "08_flash", "Online softmax: one FlashAttention block", "flash.go", []string{"state.go"}, "flash_test.go", "flash_solution.go", "notebooks/05_flash.ipynb"},
	{9, "09_kvcache", "One KV-cache decoding step", "kvcache.go", nil, "kvcache_test.go", "kvcache_solution.go", "notebooks/07_kvcache.ipynb"},
	{10, "10_statedict", "Load a PyTorch state_dict, match PyTorch's output", "statedict.go", nil, "statedict_test.go", "statedict_solution.go", "notebooks/06_parity.ipynb"},
	{11, "11_gqa", "Grouped-query attention, k and v never repeated", "gqa.go", nil, "gqa_test.go", "gqa_solution.go", "mhalib/gqa.go"},
	{12, "12_rope", "Rotary position embedding (RoPE), half-split", "rope.go", nil, "rope_test.go", "rope_solution.go", "mhalib/rope.go"},
	{13, "13_window", "Causal sliding-window attention", "window.go", nil, "window_test.go", "window_solution.go", "mhalib/window.go"},
	{14, "14_merge", "Merge two shards of keys (log-sum-exp)", "merge.go", nil, "merge_test.go", "merge_solution.go", "notebooks/13_devices.ipynb"},
}

// files holds the pristine copies (no solutions: package solutions has them).
//
//go:embed */README.md */hint.md */*_test.go
//go:embed 01_linear/linear.go 02_xavier/xavier.go 03_heads/heads.go 04_uneven_heads/uneven.go
//go:embed 05_sdpa/sdpa.go 06_masks/masks.go 07_mha/mha.go 08_flash/flash.go 08_flash/state.go
//go:embed 09_kvcache/kvcache.go 10_statedict/statedict.go 11_gqa/gqa.go 12_rope/rope.go 13_window/window.go 14_merge/merge.go
//go:embed internal/grader/*.go testdata/*.safetensors
var files embed.FS

// Lookup returns the exercise with the given number, or false.
func Lookup(number int) (Exercise, bool) {
	for _, e := range exercises {
		if e.Number == number {
			return e, true
		}
	}
	return Exercise{}, false
}

// Path joins the exercise folder and a file name: "01_linear/linear.go".
func (e Exercise) Path(name string) string { return path.Join(e.Dir, name) }

// Protected returns the files of the exercise that grading restores from the original: the
// grader and the given files.
func (e Exercise) Protected() []string {
	out := []string{e.Path(e.Grader)}
	for _, g := range e.Given {
		out = append(out, e.Path(g))
	}
	return out
}

// Shared returns the files every grader uses, which grading restores too: the helper package
// lessons/internal/grader and the PyTorch fixtures in lessons/testdata.
func Shared() []string {
	var out []string
	for p := range manifest {
		if strings.HasPrefix(p, "internal/grader/") || strings.HasPrefix(p, "testdata/") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Original returns the pristine content of a file of the lessons folder (e.g.
// "01_linear/linear_test.go") as embedded in this binary, and whether it is genuine: its git blob
// hash equals Manifest's. A binary built from a tree where the file was edited embeds the edit;
// the caller then needs another source, e.g. the git object named by Manifest[name].
func Original(name string) (data []byte, genuine bool, err error) {
	want, ok := manifest[name]
	if !ok {
		return nil, false, fmt.Errorf("lessons: %s is not a file of the lessons", name)
	}
	data, err = files.ReadFile(name)
	if err != nil {
		return nil, false, fmt.Errorf("lessons: %s is not embedded: %w", name, err)
	}
	return data, GitBlobHash(data) == want, nil
}

// GitBlobHash is the hash git gives a file with this content (`git hash-object`), in hex.
func GitBlobHash(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// EmbeddedNames lists the embedded files, sorted.
func EmbeddedNames() []string {
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		entries, _ := files.ReadDir(dir)
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			if dir == "." {
				p = e.Name()
			}
			if e.IsDir() {
				walk(p)
				continue
			}
			out = append(out, p)
		}
	}
	walk(".")
	slices.Sort(out)
	return out
}
