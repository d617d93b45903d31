// Quickstart runs the weights of a PyTorch nn.MultiheadAttention with mhalib and checks the
// output against PyTorch's. Run it from the repository's root: go run ./examples/quickstart
package main

import (
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	_ "github.com/mhalab/mhalab/fastgo" // optional: a faster pure-Go backend
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/torchio"
	"github.com/mhalab/mhalab/xla"
)

func main() {
	if err := run(os.Stdout, os.Getenv("GOMLX_BACKEND")); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, spec string) error {
	// 1. A backend, without network access: "go", "xla:cpu" or "" (the best one here).
	backend, err := xla.New(spec)
	if err != nil {
		return err
	}
	defer xla.Close(backend) // backend.Finalize, after the device memory of dropped tensors is freed

	// 2. What PyTorch saved: nn.MultiheadAttention(8, 2, batch_first=True)'s state_dict, the
	//    inputs query, key, value [B=2, L=4, E=8], and its output computed in float64.
	var saved [3]*torchio.File
	for i, suffix := range []string{".weights", ".inputs", ""} {
		if saved[i], err = torchio.ReadFile("parity/testdata/mha_self" + suffix + ".safetensors"); err != nil {
			return err
		}
	}
	weights, inputs, torch := saved[0].Tensors, saved[1].Tensors, saved[2].Tensors

	// 3. Load the state_dict into mhalib's variables, build the graph, run it.
	ctx := context.New()
	if _, err := torchio.LoadMHA(ctx, mhalib.DefaultScope, weights); err != nil {
		return err
	}
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, q, k, v *graph.Node) *graph.Node {
		return mhalib.MultiHeadAttention(ctx, q, k, v, 2).Done() // [B, Lq, E]
	})
	if err != nil {
		return err
	}
	outputs, err := exec.Exec(inputs["query"], inputs["key"], inputs["value"])
	if err != nil {
		return err
	}

	// 4. Compare with PyTorch.
	got := tensors.MustCopyFlatData[float32](outputs[0])
	want := tensors.MustCopyFlatData[float64](torch["ref64.attn_output"])
	worst := 0.0
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i])-want[i]))
	}
	fmt.Fprintln(w, "output:", outputs[0].Shape())
	fmt.Fprintln(w, "equal to PyTorch's output within 1e-5:", worst <= 1e-5)
	return nil
}
