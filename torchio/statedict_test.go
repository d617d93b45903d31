package torchio

import (
	"maps"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

func TestLoadMHAFile(t *testing.T) {
	ctx := context.New()
	spec, err := LoadMHAFile(ctx, mhalib.DefaultScope, "testdata/mha_state_dict.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	want := "embed_dim=6 kdim=4 vdim=5 bias=true add_bias_kv=true (separate q/k/v_proj_weight, Float32)"
	if spec.String() != want {
		t.Errorf("spec %s, want %s", spec, want)
	}
	// Every key is now a variable holding the file's values.
	f, err := ReadFile("testdata/mha_state_dict.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	sd, err := mhalib.StateDict(ctx, mhalib.DefaultScope)
	if err != nil {
		t.Fatal(err)
	}
	if len(sd) != len(f.Tensors) {
		t.Errorf("StateDict has %d keys, file %d", len(sd), len(f.Tensors))
	}
	for k, v := range f.Tensors {
		if sd[k] == nil || !sd[k].Equal(v) {
			t.Errorf("%s: variable %v, file %v", k, sd[k], v)
		}
	}
}

func TestInferMHAErrors(t *testing.T) {
	f, err := ReadFile("testdata/mha_state_dict.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(fn func(sd map[string]*tensors.Tensor)) map[string]*tensors.Tensor {
		sd := maps.Clone(f.Tensors)
		fn(sd)
		return sd
	}
	cases := []struct {
		name string
		sd   map[string]*tensors.Tensor
		want string
	}{
		{"prefixed keys", edit(func(sd map[string]*tensors.Tensor) { sd["self_attn.out_proj.weight"] = sd["out_proj.weight"] }), "self_attn.out_proj.weight"},
		{"no out_proj.weight", edit(func(sd map[string]*tensors.Tensor) { delete(sd, "out_proj.weight") }), "out_proj.weight: missing"},
		{"no k_proj_weight", edit(func(sd map[string]*tensors.Tensor) { delete(sd, "k_proj_weight") }), "k_proj_weight: missing"},
		{"in_proj_bias alone", edit(func(sd map[string]*tensors.Tensor) { delete(sd, "out_proj.bias") }), "bias sets both"},
		{"bias_k alone", edit(func(sd map[string]*tensors.Tensor) { delete(sd, "bias_v") }), "add_bias_kv sets both"},
		{"out_proj.weight not square", edit(func(sd map[string]*tensors.Tensor) { sd["out_proj.weight"] = sd["k_proj_weight"] }), "want [E, E]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadMHA(context.New(), "", c.sd)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "torchio: ") {
				t.Errorf("error %v, want one starting with \"torchio: \" containing %q", err, c.want)
			}
		})
	}
	// Shapes are checked by mhalib.LoadStateDict; the error names the key.
	bad := edit(func(sd map[string]*tensors.Tensor) {
		sd["bias_k"] = tensors.FromFlatDataAndDimensions(make([]float32, 5), 1, 1, 5)
	})
	if _, err := LoadMHA(context.New(), "", bad); err == nil || !strings.Contains(err.Error(), "bias_k") {
		t.Errorf("wrong bias_k shape: error %v", err)
	}
}

func TestSubDict(t *testing.T) {
	sd := map[string]*tensors.Tensor{"layers.0.self_attn.in_proj_weight": tensors.FromScalar(float32(1)), "layers.0.norm.weight": tensors.FromScalar(float32(2))}
	sub := SubDict(sd, "layers.0.self_attn.")
	if len(sub) != 1 || sub["in_proj_weight"] == nil {
		t.Errorf("SubDict = %v", sub)
	}
}
