package mhalib

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// PyTorch state_dict ↔ mhalib variables.
//
// nn.MultiheadAttention's state_dict keys map one to one to variables in the attention's scope:
//
//	in_proj_weight [3E, E]      → <scope>/in_proj_weight        (fused form)
//	q_proj_weight [E, E]        → <scope>/q_proj_weight         (separate form, with k_ and v_)
//	k_proj_weight [E, kdim]     → <scope>/k_proj_weight
//	v_proj_weight [E, vdim]     → <scope>/v_proj_weight
//	in_proj_bias [3E]           → <scope>/in_proj_bias
//	bias_k, bias_v [1, 1, E]    → <scope>/bias_k, <scope>/bias_v
//	out_proj.weight [E, E]      → <scope>/out_proj/weight
//	out_proj.bias [E]           → <scope>/out_proj/bias

// stateDictKeys lists the keys of nn.MultiheadAttention's state_dict: the one list of these
// names in mhalab (torchio and the command use it through StateDictKeys and InferStateDict).
var stateDictKeys = []string{
	VarInProjWeight, VarQProjWeight, VarKProjWeight, VarVProjWeight, VarInProjBias,
	VarBiasK, VarBiasV, ScopeOutProj + ".weight", ScopeOutProj + ".bias",
}

// StateDictKeys returns the keys an nn.MultiheadAttention state_dict may have, as listed above.
func StateDictKeys() []string { return slices.Clone(stateDictKeys) }

// MHALayout is the nn.MultiheadAttention configuration a state_dict implies.
type MHALayout struct {
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

// String describes the layout as PyTorch's constructor arguments.
func (l MHALayout) String() string {
	layout := "fused in_proj_weight"
	if l.Separate {
		layout = "separate q/k/v_proj_weight"
	}
	return fmt.Sprintf("embed_dim=%d kdim=%d vdim=%d bias=%v add_bias_kv=%v (%s, %s)",
		l.EmbedDim, l.KDim, l.VDim, l.Bias, l.AddBiasKV, layout, l.DType)
}

// InferStateDict checks that sd is one consistent nn.MultiheadAttention state_dict and returns
// its layout: known keys only (a submodule's state_dict must have its prefix removed), either
// in_proj_weight or all of q/k/v_proj_weight, out_proj.weight [E, E], in_proj_bias with
// out_proj.bias, bias_k with bias_v, one float dtype, and every shape consistent with E, kdim
// and vdim. The error (an *ArgumentError) names the key, the expected and the got shapes.
func InferStateDict(sd map[string]*tensors.Tensor) (l MHALayout, err error) {
	var unknown []string
	for key, t := range sd {
		if !slices.Contains(stateDictKeys, key) {
			unknown = append(unknown, key)
		} else if t == nil {
			return l, &ArgumentError{Arg: "state_dict key " + key, Msg: "nil tensor"}
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return l, &ArgumentError{Arg: "state_dict key " + unknown[0], Msg: fmt.Sprintf(
			"unknown key (unknown: %s; nn.MultiheadAttention has %s; a submodule's state_dict needs its prefix removed)",
			strings.Join(unknown, ", "), strings.Join(stateDictKeys, ", "))}
	}
	keyErr := func(key, format string, args ...any) error {
		return &ArgumentError{Arg: "state_dict key " + key, Msg: fmt.Sprintf(format, args...)}
	}
	has := func(key string) bool { _, ok := sd[key]; return ok }
	dims := func(key string) []int { return sd[key].Shape().Dimensions }

	// The embed dim E comes from out_proj.weight [E, E].
	outW, outB := ScopeOutProj+".weight", ScopeOutProj+".bias"
	if !has(outW) {
		return l, keyErr(outW, "missing: every nn.MultiheadAttention has out_proj.weight")
	}
	if d := dims(outW); len(d) != 2 || d[0] != d[1] {
		return l, keyErr(outW, "shape %s: want [E, E]", sd[outW].Shape())
	}
	E := dims(outW)[0]
	l = MHALayout{EmbedDim: E, KDim: E, VDim: E, DType: sd[outW].DType()}
	if !l.DType.IsFloat() {
		return l, keyErr(outW, "shape %s: want a float dtype", sd[outW].Shape())
	}

	// Expected shape of every key present.
	want := map[string][]int{outW: {E, E}}
	fused := has(VarInProjWeight)
	l.Separate = has(VarQProjWeight) || has(VarKProjWeight) || has(VarVProjWeight)
	switch {
	case fused && l.Separate:
		return l, keyErr(VarInProjWeight, "given together with q/k/v_proj_weight: a layer is either fused or separate")
	case fused:
		want[VarInProjWeight] = []int{3 * E, E}
	case l.Separate:
		for _, key := range []string{VarQProjWeight, VarKProjWeight, VarVProjWeight} {
			if !has(key) {
				return l, keyErr(key, "missing: separate projections need q_proj_weight, k_proj_weight and v_proj_weight")
			}
		}
		want[VarQProjWeight] = []int{E, E}
		for _, key := range []string{VarKProjWeight, VarVProjWeight} {
			if d := dims(key); len(d) != 2 || d[0] != E || d[1] <= 0 {
				return l, keyErr(key, "shape %s: want [E=%d, in]", sd[key].Shape(), E)
			}
			want[key] = dims(key)
		}
		l.KDim, l.VDim = dims(VarKProjWeight)[1], dims(VarVProjWeight)[1]
	default:
		return l, keyErr(VarInProjWeight, "missing (and no q/k/v_proj_weight either)")
	}
	if has(VarInProjBias) != has(outB) {
		return l, keyErr(VarInProjBias, "present: %v, out_proj.bias present: %v: nn.MultiheadAttention's bias sets both",
			has(VarInProjBias), has(outB))
	}
	if l.Bias = has(VarInProjBias); l.Bias {
		want[VarInProjBias] = []int{3 * E}
		want[outB] = []int{E}
	}
	if has(VarBiasK) != has(VarBiasV) {
		return l, keyErr(VarBiasK, "present: %v, bias_v present: %v: add_bias_kv sets both", has(VarBiasK), has(VarBiasV))
	}
	if l.AddBiasKV = has(VarBiasK); l.AddBiasKV {
		want[VarBiasK] = []int{1, 1, E}
		want[VarBiasV] = []int{1, 1, E}
	}
	for key, t := range sd {
		if !slices.Equal(t.Shape().Dimensions, want[key]) {
			return l, keyErr(key, "shape %s: expected %v (E=%d from %s)", t.Shape(), want[key], E, outW)
		}
		if t.DType() != l.DType {
			return l, keyErr(key, "dtype %s differs from %s's %s", t.DType(), outW, l.DType)
		}
	}
	return l, nil
}

// LoadStateDict sets the variables of a multi-head attention from a PyTorch nn.MultiheadAttention
// state_dict (keys as listed above), in ctx.In(scope) (scope "" means ctx's current scope; the
// builder's default is DefaultScope). It checks the state_dict as InferStateDict does, and that
// shapes agree with variables already in the scope. The error names the key, the expected and
// the got shapes; unknown keys are an error.
//
// The MultiHeadAttention builder then picks the layout (fused/separate, bias, bias_kv) from the
// loaded variables unless told otherwise; use the same dtype for the graph's inputs.
func LoadStateDict(ctx *context.Context, scope string, sd map[string]*tensors.Tensor) error {
	if ctx == nil {
		return &ArgumentError{Arg: "LoadStateDict", Msg: "ctx is nil"}
	}
	if _, err := InferStateDict(sd); err != nil {
		return err
	}
	keys := slices.Sorted(maps.Keys(sd))
	ctx = ctx.Checked(false)
	if scope != "" {
		ctx = ctx.In(scope)
	}
	for _, key := range keys {
		vctx, name := ctx, key
		if sub, n, ok := strings.Cut(key, "."); ok {
			vctx, name = ctx.In(sub), n
		}
		if err := setVariable(vctx, name, sd[key], key); err != nil {
			return err
		}
	}
	return nil
}

// setVariable creates or updates variable name in ctx's scope with value t.
func setVariable(ctx *context.Context, name string, t *tensors.Tensor, key string) error {
	v := ctx.GetVariableByScopeAndName(ctx.Scope(), name)
	if v == nil {
		return Try(func() { ctx.VariableWithValue(name, t) })
	}
	if !v.Shape().Equal(t.Shape()) {
		return &ArgumentError{Arg: "state_dict key " + key,
			Msg: fmt.Sprintf("shape %s: expected %s, the shape of existing variable %s/%s", t.Shape(), v.Shape(), ctx.Scope(), name)}
	}
	if cur, err := v.Value(); err == nil && cur == t {
		return nil // already this variable's value: SetValue would free it
	}
	return v.SetValue(t)
}

// StateDict returns the variables of the multi-head attention in ctx.In(scope) (scope "" means
// ctx's current scope) under PyTorch's state_dict keys (see LoadStateDict). Only variables that
// exist and hold a value are returned. The tensors are copies: loading them into another (or the
// same) context, or training on, leaves each side's values intact.
func StateDict(ctx *context.Context, scope string) (map[string]*tensors.Tensor, error) {
	if ctx == nil {
		return nil, &ArgumentError{Arg: "StateDict", Msg: "ctx is nil"}
	}
	if scope != "" {
		ctx = ctx.In(scope)
	}
	sd := map[string]*tensors.Tensor{}
	for _, key := range stateDictKeys {
		s, name := ctx.Scope(), key
		if sub, n, ok := strings.Cut(key, "."); ok {
			s, name = ctx.In(sub).Scope(), n
		}
		v := ctx.GetVariableByScopeAndName(s, name)
		if v == nil || !v.HasValue() {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return nil, err
		}
		if sd[key], err = t.LocalClone(); err != nil {
			return nil, err
		}
	}
	if len(sd) == 0 {
		return nil, &ArgumentError{Arg: "StateDict", Msg: fmt.Sprintf("no attention variables with values in scope %q", ctx.Scope())}
	}
	return sd, nil
}
