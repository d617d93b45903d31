package torchio_test

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/torchio"
)

// Load a state_dict saved straight from PyTorch:
//
//	mha = torch.nn.MultiheadAttention(6, 2, kdim=4, vdim=5, add_bias_kv=True)
//	safetensors.torch.save_file(mha.state_dict(), "mha_state_dict.safetensors")
//
// into the variables of mhalib.MultiHeadAttention, which then uses them.
func ExampleLoadMHAFile() {
	ctx := context.New()
	spec, err := torchio.LoadMHAFile(ctx, mhalib.DefaultScope, "testdata/mha_state_dict.safetensors")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(spec)
	// Output: embed_dim=6 kdim=4 vdim=5 bias=true add_bias_kv=true (separate q/k/v_proj_weight, Float32)
}
