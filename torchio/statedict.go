package torchio

import (
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// The names and checks of an nn.MultiheadAttention state_dict belong to mhalib
// (mhalib.StateDictKeys, mhalib.InferStateDict, mhalib.LoadStateDict); torchio reads the files.

// MHASpec is the nn.MultiheadAttention configuration that a state_dict implies.
type MHASpec = mhalib.MHALayout

// InferMHA reads the configuration off a state_dict's names and shapes with
// mhalib.InferStateDict; the error starts with "torchio: " and names the key.
func InferMHA(sd map[string]*tensors.Tensor) (MHASpec, error) {
	spec, err := mhalib.InferStateDict(sd)
	if err != nil {
		return MHASpec{}, fmt.Errorf("torchio: %w", err)
	}
	return spec, nil
}

// LoadMHA infers the configuration of an nn.MultiheadAttention state_dict (InferMHA) and sets the
// variables of the mhalib.MultiHeadAttention in ctx.In(scope) from it (mhalib.LoadStateDict;
// scope "" is ctx's current scope, mhalib.DefaultScope is the builder's default). The builder then
// picks up bias, add_bias_kv and the projection layout from the loaded variables.
func LoadMHA(ctx *context.Context, scope string, sd map[string]*tensors.Tensor) (MHASpec, error) {
	spec, err := InferMHA(sd)
	if err != nil {
		return MHASpec{}, err
	}
	if err := mhalib.LoadStateDict(ctx, scope, sd); err != nil {
		return MHASpec{}, fmt.Errorf("torchio: %w", err)
	}
	return spec, nil
}

// LoadMHAFile reads a safetensors file holding an nn.MultiheadAttention state_dict (as written by
// `safetensors.torch.save_file(mha.state_dict(), path)`) and loads it with LoadMHA.
func LoadMHAFile(ctx *context.Context, scope, path string) (MHASpec, error) {
	f, err := ReadFile(path)
	if err != nil {
		return MHASpec{}, err
	}
	spec, err := LoadMHA(ctx, scope, f.Tensors)
	if err != nil {
		return MHASpec{}, fmt.Errorf("%w (file %s)", err, path)
	}
	return spec, nil
}

// SubDict returns the entries of sd whose key starts with prefix, with the prefix removed: the
// state_dict of a submodule, e.g. SubDict(sd, "encoder.layers.0.self_attn.").
func SubDict(sd map[string]*tensors.Tensor, prefix string) map[string]*tensors.Tensor {
	out := map[string]*tensors.Tensor{}
	for k, v := range sd {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// MHAMask converts a mask in nn.MultiheadAttention's convention to mhalib's: a bool mask (or a
// uint8 one, read as bool) is true where attention is not allowed, a float mask is added to the
// logits. Use it for attn_mask and key_padding_mask alike.
func MHAMask(m *graph.Node) mhalib.Mask {
	switch m.DType() {
	case dtypes.Bool:
		return mhalib.MaskBlockedWhereTrue(m)
	case dtypes.Uint8:
		return mhalib.MaskBlockedWhereTrue(graph.NotEqual(m, graph.ScalarZero(m.Graph(), dtypes.Uint8)))
	}
	return mhalib.MaskAdditive(m)
}
