//go:build lessons || solution

package statedict

// The grader of lesson 10. `mhalab lessons check 10` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 10, Dir: "10_statedict"}

// stateDict reads lessons/testdata/<name>.weights.safetensors, a state_dict PyTorch saved.
func stateDict(t *testing.T, name string) map[string]*tensors.Tensor {
	t.Helper()
	return grader.LoadFixture(t, name+".weights").Tensors
}

// field is one member of Weights with its name and the expected host value (nil = absent).
type field struct {
	name string
	got  *tensors.Tensor
	want *mhatest.Tensor
}

func fields(w Weights, p mhatest.MHAParams) []field {
	return []field{{"Wq", w.Wq, p.Wq}, {"Wk", w.Wk, p.Wk}, {"Wv", w.Wv, p.Wv}, {"Bq", w.Bq, p.Bq},
		{"Bk", w.Bk, p.Bk}, {"Bv", w.Bv, p.Bv}, {"Wo", w.Wo, p.Wo}, {"Bo", w.Bo, p.Bo}}
}

// checkWeights compares every field of w with the parameters of the fixture.
func checkWeights(t *testing.T, what string, w Weights, p mhatest.MHAParams) bool {
	t.Helper()
	ok := true
	for _, f := range fields(w, p) {
		switch {
		case f.want == nil && f.got != nil:
			lesson.Failf(t, "%s: %s should be nil (the state_dict has no such bias), got shape %s", what, f.name, f.got.Shape())
			ok = false
		case f.want != nil && f.got == nil:
			lesson.Failf(t, "%s: %s is nil, expected shape %v", what, f.name, f.want.Shape)
			ok = false
		case f.want != nil:
			ok = lesson.Close(t, what+": "+f.name, f.got, f.want, 0) && ok
		}
	}
	return ok
}

// host converts Weights to mhatest parameters (E, heads from the caller).
func host(t *testing.T, w Weights, E, h int) mhatest.MHAParams {
	t.Helper()
	p := mhatest.MHAParams{E: E, NumHeads: h}
	for _, f := range []struct {
		name string
		dst  **mhatest.Tensor
		src  *tensors.Tensor
	}{{"Wq", &p.Wq, w.Wq}, {"Wk", &p.Wk, w.Wk}, {"Wv", &p.Wv, w.Wv}, {"Bq", &p.Bq, w.Bq}, {"Bk", &p.Bk, w.Bk},
		{"Bv", &p.Bv, w.Bv}, {"Wo", &p.Wo, w.Wo}, {"Bo", &p.Bo, w.Bo}} {
		if f.src == nil && f.name[0] == 'W' {
			lesson.Fatalf(t, "Weights.%s is nil: every weight must be set to run the layer", f.name)
		}
		if f.src != nil {
			x, err := grader.Host(f.src)
			if err != nil {
				lesson.Fatalf(t, "Weights: %v", err)
			}
			*f.dst = x
		}
	}
	return p
}

// loaded is what FromStateDict and LoadFile return, as one value (grader.Call).
type loaded struct {
	W   Weights
	Err error
}

// fromStateDict is the student's FromStateDict(sd), called by the student's program.
func fromStateDict(t *testing.T, what string, sd map[string]*tensors.Tensor) (Weights, error) {
	t.Helper()
	r := grader.Call(lesson, t, what, func() loaded { w, err := FromStateDict(sd); return loaded{w, err} })
	return r.W, r.Err
}

// loadFile is the student's LoadFile(path), called by the student's program.
func loadFile(t *testing.T, path string) (Weights, error) {
	t.Helper()
	r := grader.Call(lesson, t, fmt.Sprintf("LoadFile(%q)", path), func() loaded { w, err := LoadFile(path); return loaded{w, err} })
	return r.W, r.Err
}

func load(t *testing.T, what string, sd map[string]*tensors.Tensor) Weights {
	t.Helper()
	w, err := fromStateDict(t, what, sd)
	if err != nil {
		lesson.Fatalf(t, "%s: unexpected error: %v", what, err)
	}
	return w
}

// expectError checks that FromStateDict fails on sd and that the error names key.
func expectError(t *testing.T, what string, sd map[string]*tensors.Tensor, key string) {
	t.Helper()
	_, err := fromStateDict(t, what, sd)
	if err == nil {
		lesson.Failf(t, "%s: expected an error, got none", what)
		return
	}
	if !strings.Contains(err.Error(), key) {
		lesson.Failf(t, "%s: the error should name %q; got: %v", what, key, err)
	}
}

func TestLesson(t *testing.T) {
	t.Run("fused in-projection", func(t *testing.T) {
		m := grader.LoadTorchMHA(t, "mha_cross")
		checkWeights(t, "FromStateDict(mha_cross's state_dict: in_proj_weight [24 8])", load(t, "FromStateDict(mha_cross)", stateDict(t, "mha_cross")), m.Params)
	})
	t.Run("separate q k v projections", func(t *testing.T) {
		m := grader.LoadTorchMHA(t, "mha_kdim_vdim")
		checkWeights(t, "FromStateDict(kdim=6, vdim=5: q_proj_weight, k_proj_weight, v_proj_weight)", load(t, "FromStateDict(mha_kdim_vdim)", stateDict(t, "mha_kdim_vdim")), m.Params)
	})
	t.Run("no bias", func(t *testing.T) {
		m := grader.LoadTorchMHA(t, "mha_cross")
		sd := maps.Clone(stateDict(t, "mha_cross"))
		delete(sd, "in_proj_bias")
		delete(sd, "out_proj.bias")
		p := m.Params
		p.Bq, p.Bk, p.Bv, p.Bo = nil, nil, nil, nil
		checkWeights(t, "FromStateDict without in_proj_bias and out_proj.bias (bias=False)", load(t, "FromStateDict(bias=False)", sd), p)
	})
	t.Run("a missing weight is an error naming it", func(t *testing.T) {
		sd := maps.Clone(stateDict(t, "mha_cross"))
		delete(sd, "out_proj.weight")
		expectError(t, "FromStateDict without out_proj.weight", sd, "out_proj.weight")
		sd = maps.Clone(stateDict(t, "mha_kdim_vdim"))
		delete(sd, "v_proj_weight")
		expectError(t, "FromStateDict with q_proj_weight and k_proj_weight but no v_proj_weight", sd, "v_proj_weight")
	})
	t.Run("a wrong shape is an error naming the key", func(t *testing.T) {
		sd := maps.Clone(stateDict(t, "mha_cross"))
		sd["in_proj_weight"] = tensors.FromFlatDataAndDimensions(make([]float32, 24*7), 24, 7)
		expectError(t, "FromStateDict with in_proj_weight [24 7] (E = 8)", sd, "in_proj_weight")
		sd = maps.Clone(stateDict(t, "mha_cross"))
		sd["in_proj_bias"] = tensors.FromFlatDataAndDimensions(make([]float32, 16), 16)
		expectError(t, "FromStateDict with in_proj_bias [16] (want [24])", sd, "in_proj_bias")
	})
	t.Run("LoadFile reads a safetensors file", func(t *testing.T) {
		m := grader.LoadTorchMHA(t, "mha_cross")
		path := filepath.Join(grader.FixtureDir, "mha_cross.weights.safetensors")
		w, err := loadFile(t, path)
		if err != nil {
			lesson.Fatalf(t, "LoadFile(%q): unexpected error: %v", path, err)
		}
		checkWeights(t, "LoadFile(mha_cross.weights.safetensors)", w, m.Params)
		if _, err := loadFile(t, filepath.Join(grader.FixtureDir, "no_such_file.safetensors")); err == nil {
			lesson.Failf(t, "LoadFile of a file that does not exist: expected an error, got none")
		}
	})
	for _, c := range []struct{ check, name string }{{"matches PyTorch, fused layout", "mha_cross"}, {"matches PyTorch, separate layout", "mha_kdim_vdim"}} {
		name := c.name
		t.Run(c.check, func(t *testing.T) {
			// The forward of nn.MultiheadAttention(8, 2) with your weights, in float64 loops
			// (mhatest.MHA), against PyTorch's float64 run on the same float32 values.
			m := grader.LoadTorchMHA(t, name)
			p := host(t, load(t, "FromStateDict("+name+")", stateDict(t, name)), m.E, m.H)
			out, _, err := mhatest.MHA(p, m.Query, m.Key, m.Value, mhatest.MHAOptions{})
			if err != nil {
				lesson.Fatalf(t, "the forward with your weights failed: %v", err)
			}
			lesson.CloseHost(t, "attention output with your weights vs PyTorch's attn_output", out, m.Out, 1e-9)
		})
	}
	t.Run("runs in mhalib on the backend", func(t *testing.T) {
		// Your weights as mhalib variables, then mhalib.MultiHeadAttention on the lessons' backend
		// in float32, against PyTorch.
		m := grader.LoadTorchMHA(t, "mha_kdim_vdim")
		w := load(t, "FromStateDict(mha_kdim_vdim)", stateDict(t, "mha_kdim_vdim"))
		if w.Wq == nil || w.Wk == nil || w.Wv == nil || w.Wo == nil || w.Bq == nil || w.Bk == nil || w.Bv == nil || w.Bo == nil {
			lesson.Fatalf(t, "FromStateDict(mha_kdim_vdim): every weight and bias must be set")
		}
		inBias := append(append(tensors.MustCopyFlatData[float32](w.Bq), tensors.MustCopyFlatData[float32](w.Bk)...), tensors.MustCopyFlatData[float32](w.Bv)...)
		sd := map[string]*tensors.Tensor{"q_proj_weight": w.Wq, "k_proj_weight": w.Wk, "v_proj_weight": w.Wv,
			"in_proj_bias": tensors.FromFlatDataAndDimensions(inBias, len(inBias)), "out_proj.weight": w.Wo, "out_proj.bias": w.Bo}
		ctx := context.New()
		if err := mhalib.LoadStateDict(ctx, mhalib.DefaultScope, sd); err != nil {
			lesson.Fatalf(t, "mhalib.LoadStateDict rejected your weights: %v", err)
		}
		out := lesson.RunCtx(t, "mhalib.MultiHeadAttention with your weights", ctx, func(ctx *context.Context, g *Graph, in []*Node) []*Node {
			return []*Node{mhalib.MultiHeadAttention(ctx, in[0], in[1], in[2], m.H).Done()}
		}, grader.F32(m.Query), grader.F32(m.Key), grader.F32(m.Value))
		lesson.Close(t, "mhalib's output with your weights vs PyTorch's attn_output", out[0], m.Out, 1e-5)
	})
}
