package torchio

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// MHANames are the state_dict keys of torch.nn.MultiheadAttention.
var MHANames = []string{
	"in_proj_weight", "in_proj_bias", "q_proj_weight", "k_proj_weight", "v_proj_weight",
	"bias_k", "bias_v", "out_proj.weight", "out_proj.bias",
}

// MHASpec is the nn.MultiheadAttention configuration that a state_dict implies.
type MHASpec struct {
	EmbedDim int // E, from out_proj.weight [E, E]
	KDim     int // from k_proj_weight [E, kdim]; E with the fused in_proj_weight
	VDim     int // from v_proj_weight [E, vdim]; E with the fused in_proj_weight
	// Separate is true for q_proj_weight/k_proj_weight/v_proj_weight, false for in_proj_weight.
	Separate bool
	// Bias: in_proj_bias and out_proj.bias are present (nn.MultiheadAttention's bias=True).
	Bias bool
	// AddBiasKV: bias_k and bias_v are present.
	AddBiasKV bool
	// DType of the parameters.
	DType dtypes.DType
}

// String describes the spec as PyTorch's constructor arguments.
func (s MHASpec) String() string {
	return fmt.Sprintf("embed_dim=%d kdim=%d vdim=%d bias=%v add_bias_kv=%v (%s, %s)", s.EmbedDim, s.KDim, s.VDim,
		s.Bias, s.AddBiasKV, map[bool]string{true: "separate q/k/v_proj_weight", false: "fused in_proj_weight"}[s.Separate], s.DType)
}

// InferMHA reads the configuration off a state_dict's names and shapes. It rejects names that
// nn.MultiheadAttention does not have and inconsistent sets (in_proj_bias without out_proj.bias,
// bias_k without bias_v); mhalib.LoadStateDict checks the shapes in full.
func InferMHA(sd map[string]*tensors.Tensor) (MHASpec, error) {
	var unknown []string
	for k := range sd {
		known := false
		for _, n := range MHANames {
			known = known || k == n
		}
		if !known {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return MHASpec{}, fmt.Errorf("torchio: state_dict has keys %v that nn.MultiheadAttention does not have (want %s; a submodule's state_dict? use SubDict)",
			unknown, strings.Join(MHANames, ", "))
	}
	outW := sd["out_proj.weight"]
	if outW == nil {
		return MHASpec{}, fmt.Errorf("torchio: state_dict has no out_proj.weight (keys: %v)", sortedKeys(sd))
	}
	if d := outW.Shape().Dimensions; len(d) != 2 || d[0] != d[1] {
		return MHASpec{}, fmt.Errorf("torchio: out_proj.weight has shape %s, want [E, E]", outW.Shape())
	}
	s := MHASpec{EmbedDim: outW.Shape().Dim(0), DType: outW.DType()}
	s.KDim, s.VDim = s.EmbedDim, s.EmbedDim
	_, fused := sd["in_proj_weight"]
	_, s.Separate = sd["q_proj_weight"]
	switch {
	case fused && s.Separate:
		return MHASpec{}, fmt.Errorf("torchio: state_dict has both in_proj_weight and q_proj_weight")
	case s.Separate:
		for _, k := range []string{"k_proj_weight", "v_proj_weight"} {
			w := sd[k]
			if w == nil {
				return MHASpec{}, fmt.Errorf("torchio: state_dict has q_proj_weight but no %s", k)
			}
			if w.Rank() != 2 || w.Shape().Dim(0) != s.EmbedDim {
				return MHASpec{}, fmt.Errorf("torchio: %s has shape %s, want [E=%d, dim]", k, w.Shape(), s.EmbedDim)
			}
		}
		s.KDim, s.VDim = sd["k_proj_weight"].Shape().Dim(1), sd["v_proj_weight"].Shape().Dim(1)
	case !fused:
		return MHASpec{}, fmt.Errorf("torchio: state_dict has neither in_proj_weight nor q_proj_weight (keys: %v)", sortedKeys(sd))
	}
	_, inB := sd["in_proj_bias"]
	_, outB := sd["out_proj.bias"]
	if inB != outB {
		return MHASpec{}, fmt.Errorf("torchio: state_dict has in_proj_bias=%v but out_proj.bias=%v: nn.MultiheadAttention's bias sets both", inB, outB)
	}
	s.Bias = inB
	_, bk := sd["bias_k"]
	_, bv := sd["bias_v"]
	if bk != bv {
		return MHASpec{}, fmt.Errorf("torchio: state_dict has bias_k=%v but bias_v=%v: add_bias_kv sets both", bk, bv)
	}
	s.AddBiasKV = bk
	return s, nil
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

func sortedKeys(m map[string]*tensors.Tensor) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
