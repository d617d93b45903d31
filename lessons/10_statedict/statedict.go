// Package statedict is lesson 10: loading the weights PyTorch saved, and getting PyTorch's output.
//
// Read README.md, replace the TODOs below with your code, then run `mhalab lessons check 10`.
package statedict

import (
	"github.com/gomlx/gomlx/pkg/core/tensors"
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
	// TODO: find E, pick the layout, cut the fused tensors, check every shape.
	return Weights{}, nil
}

// LoadFile reads a safetensors file written by
// safetensors.torch.save_file(module.state_dict(), path) and maps it with FromStateDict.
func LoadFile(path string) (Weights, error) {
	// TODO: read the file (package github.com/mhalab/mhalab/torchio), then FromStateDict.
	return Weights{}, nil
}
