//go:build solution

package statedict

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/torchio"
)

// Weights of one nn.MultiheadAttention, in PyTorch's layout (a weight is [out, in]), on the host.
type Weights struct {
	Wq, Wk, Wv *tensors.Tensor // [E, E], [E, kdim], [E, vdim]
	Bq, Bk, Bv *tensors.Tensor // [E] each; nil when the module has no bias (bias=False)
	Wo         *tensors.Tensor // [E, E]
	Bo         *tensors.Tensor // [E], or nil
}

// FromStateDict maps the state_dict of an nn.MultiheadAttention (the names module.state_dict()
// uses) to Weights:
//
//	in_proj_weight [3E, E]     fused form (kdim == vdim == E): rows [0, E) are Wq, [E, 2E) Wk, [2E, 3E) Wv
//	q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim]    separate form
//	in_proj_bias [3E]          Bq, Bk, Bv, in that order (absent when bias=False)
//	out_proj.weight [E, E], out_proj.bias [E]
//
// A missing weight or a tensor of the wrong shape is an error that names the key and the shapes.
func FromStateDict(sd map[string]*tensors.Tensor) (Weights, error) {
	var w Weights
	// get returns sd[key] after checking its rank, dtype float32 and the dimensions given (−1 = any).
	get := func(key string, dims ...int) (*tensors.Tensor, error) {
		t, ok := sd[key]
		if !ok {
			return nil, fmt.Errorf("state_dict: missing %q", key)
		}
		got := t.Shape().Dimensions
		match := len(got) == len(dims) && t.DType() == dtypes.Float32
		for i := 0; match && i < len(dims); i++ {
			match = dims[i] < 0 || dims[i] == got[i]
		}
		if !match {
			return nil, fmt.Errorf("state_dict: %q has shape %s, want float32 %v (−1: any)", key, t.Shape(), dims)
		}
		return t, nil
	}
	wo, err := get("out_proj.weight", -1, -1)
	if err != nil {
		return w, err
	}
	E := wo.Shape().Dim(0)
	if w.Wo, err = get("out_proj.weight", E, E); err != nil {
		return w, err
	}
	if _, fused := sd["in_proj_weight"]; fused {
		in, err := get("in_proj_weight", 3*E, E)
		if err != nil {
			return w, err
		}
		w.Wq, w.Wk, w.Wv = rows(in, 0, E), rows(in, E, 2*E), rows(in, 2*E, 3*E)
	} else {
		if w.Wq, err = get("q_proj_weight", E, E); err != nil {
			return w, err
		}
		if w.Wk, err = get("k_proj_weight", E, -1); err != nil {
			return w, err
		}
		if w.Wv, err = get("v_proj_weight", E, -1); err != nil {
			return w, err
		}
	}
	if _, ok := sd["in_proj_bias"]; ok {
		b, err := get("in_proj_bias", 3*E)
		if err != nil {
			return w, err
		}
		w.Bq, w.Bk, w.Bv = rows(b, 0, E), rows(b, E, 2*E), rows(b, 2*E, 3*E)
	}
	if _, ok := sd["out_proj.bias"]; ok {
		if w.Bo, err = get("out_proj.bias", E); err != nil {
			return w, err
		}
	}
	return w, nil
}

// rows returns x[from:to] along the first axis, as a new float32 tensor.
func rows(x *tensors.Tensor, from, to int) *tensors.Tensor {
	dims := slices.Clone(x.Shape().Dimensions)
	inner := x.Shape().Size() / dims[0]
	data := tensors.MustCopyFlatData[float32](x)
	dims[0] = to - from
	return tensors.FromFlatDataAndDimensions(data[from*inner:to*inner], dims...)
}

// LoadFile reads a safetensors file written by
// safetensors.torch.save_file(module.state_dict(), path) and maps it with FromStateDict.
func LoadFile(path string) (Weights, error) {
	f, err := torchio.ReadFile(path)
	if err != nil {
		return Weights{}, err
	}
	return FromStateDict(f.Tensors)
}
