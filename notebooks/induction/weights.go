package induction

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/torchio"
)

// Trained weights in a safetensors file: one tensor per model variable, named by its scope and
// name without the leading "/" ("wte/weight", "layer_1/attn/in_proj_weight", "ln_f/bias"), and
// the Config as JSON in the metadata ("config").

// isModelVariable reports whether a variable in scope is one of decode.Decoder's (the
// optimiser's are not saved).
func isModelVariable(scope string) bool {
	for _, prefix := range []string{"/wte", "/wpe", "/layer_", "/ln_f"} {
		if strings.HasPrefix(scope, prefix) {
			return true
		}
	}
	return false
}

// ModelWeights returns the model's variables of ctx by file name.
func ModelWeights(ctx *context.Context) (map[string]*tensors.Tensor, error) {
	out := map[string]*tensors.Tensor{}
	for v := range ctx.IterVariables() {
		if !isModelVariable(v.Scope()) {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("induction: variable %s/%s: %w", v.Scope(), v.Name(), err)
		}
		out[strings.TrimPrefix(v.Scope(), "/")+"/"+v.Name()] = t
	}
	return out, nil
}

// Save writes the model's weights and c to path.
func Save(path string, ctx *context.Context, c Config) error {
	ts, err := ModelWeights(ctx)
	if err != nil {
		return err
	}
	meta, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return torchio.WriteFile(path, ts, map[string]string{"config": string(meta)})
}

// Load reads weights written by Save into a new context and returns it with their Config. A
// file without a config, with a tensor that is not a model variable, or missing one the model
// needs is an error naming it.
func Load(path string) (*context.Context, Config, error) {
	var c Config
	f, err := torchio.ReadFile(path)
	if err != nil {
		return nil, c, err
	}
	if err := json.Unmarshal([]byte(f.Metadata["config"]), &c); err != nil {
		return nil, c, fmt.Errorf("induction: %s: no valid config in the metadata: %w", path, err)
	}
	if err := c.Check(); err != nil {
		return nil, c, fmt.Errorf("%s: %w", path, err)
	}
	want := expectedNames(c)
	for _, name := range slices.Sorted(maps.Keys(f.Tensors)) {
		if !slices.Contains(want, name) {
			return nil, c, fmt.Errorf("induction: %s: tensor %q is not a variable of %+v", path, name, c.Model)
		}
	}
	ctx := context.New()
	for _, name := range want {
		t, ok := f.Tensors[name]
		if !ok {
			return nil, c, fmt.Errorf("induction: %s: tensor %q is missing", path, name)
		}
		cut := strings.LastIndex(name, "/")
		ctx.InAbsPath("/"+name[:cut]).VariableWithValue(name[cut+1:], t)
	}
	return ctx, c, nil
}

// expectedNames lists the variables of the decoder c.Model, by file name.
func expectedNames(c Config) []string {
	if c.RoPE {
		return ropeNames(c.Model)
	}
	names := []string{"wte/weight", "wpe/weight", "ln_f/weight", "ln_f/bias"}
	for i := range c.Model.Layers {
		for _, v := range []string{"norm/weight", "norm/bias", "attn/in_proj_weight",
			"attn/in_proj_bias", "attn/out_proj/weight", "attn/out_proj/bias"} {
			names = append(names, layerName(i)+"/"+v)
		}
	}
	return names
}
