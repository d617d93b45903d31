package mhalib_test

import (
	"fmt"
	"sync"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego" // the pure-Go backend, "go"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/tensortest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/inspect"
)

// goBackend returns the pure-Go backend, which needs no plugin. One instance serves every
// example: a tensor used on one backend instance cannot be fed to another one.
var goBackend = sync.OnceValue(func() backends.Backend {
	b, err := backends.NewWithConfig("go:ops_sequential") // GoMLX v0.26's parallel scheduler deadlocks on 2 cores (xla.SimpleGoConfig)
	if err != nil {
		panic(err)
	}
	return b
})

// ramp returns a float32 tensor of the given shape filled with 0, 0.1, 0.2, ... (mod 1).
func ramp(dims ...int) *tensors.Tensor { return tensortest.Ramp(dims...) }

// Self-attention with a causal mask: 2 sequences of 3 tokens, width 8, 2 heads.
func ExampleMultiHeadAttention() {
	backend := goBackend()
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(42)) // reproducible Xavier-uniform weights
	exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) (*Node, *Node) {
		out, weights := mhalib.MultiHeadAttention(ctx, x, x, x, 2).
			Causal(mhalib.CausalTopLeft).
			DoneWithWeights() // [B, h, Lq, Lk]
		return out, ReduceMean(weights, 1) // weights averaged over the heads, as PyTorch by default
	})
	x := ramp(2, 3, 8) // [B=2, L=3, E=8]
	res := exec.MustExec(x)
	out, weights := res[0], res[1]
	fmt.Println("output:", out.Shape())
	fmt.Println("weights:", weights.Shape())
	fmt.Println("rows sum to 1:", inspect.CheckRowsSumToOne(weights, 1e-6) == nil)
	fmt.Printf("first query attends only to itself: %.1f\n", tensors.MustCopyFlatData[float32](weights)[:3])
	// Output:
	// output: (Float32)[2 3 8]
	// weights: (Float32)[2 3 3]
	// rows sum to 1: true
	// first query attends only to itself: [1.0 0.0 0.0]
}

// The variables carry PyTorch's state_dict names.
func ExampleMultiHeadAttention_variables() {
	ctx := context.New()
	exec := context.MustNewExec(goBackend(), ctx, func(ctx *context.Context, q, kv *Node) *Node {
		return mhalib.MultiHeadAttention(ctx, q, kv, kv, 2).AddBiasKV(true).Done()
	})
	exec.MustExec(ramp(1, 2, 4), ramp(1, 3, 6)) // kdim = vdim = 6 ≠ E = 4: separate projections
	for v := range ctx.IterVariables() {
		if v.Trainable {
			fmt.Println(v.ScopeAndName(), v.Shape())
		}
	}
	// Unordered output:
	// /MultiHeadAttention/in_proj_bias (Float32)[12]
	// /MultiHeadAttention/q_proj_weight (Float32)[4 4]
	// /MultiHeadAttention/k_proj_weight (Float32)[4 6]
	// /MultiHeadAttention/v_proj_weight (Float32)[4 6]
	// /MultiHeadAttention/bias_k (Float32)[1 1 4]
	// /MultiHeadAttention/bias_v (Float32)[1 1 4]
	// /MultiHeadAttention/out_proj/weight (Float32)[4 4]
	// /MultiHeadAttention/out_proj/bias (Float32)[4]
}

// Uneven heads: width 10 = 3 + 3 + 3 + 1, each head scaled by its own 1/√d.
func ExampleMHABuilder_HeadSizes() {
	ctx := context.New()
	exec := context.MustNewExec(goBackend(), ctx, func(ctx *context.Context, x *Node) (*Node, *Node) {
		return mhalib.MultiHeadAttention(ctx, x, x, x, 4).
			HeadSizes(mhalib.HeadSizesFor(10, 3)...).
			HeadStrategy(mhalib.HeadsPad).
			DoneWithWeights()
	})
	res := exec.MustExec(ramp(2, 5, 10))
	fmt.Println(res[0].Shape(), res[1].Shape())
	// Output:
	// (Float32)[2 5 10] (Float32)[2 4 5 5]
}

// Forward is the error-returning boundary: no panic escapes.
func ExampleForward() {
	x := ramp(2, 3, 10)
	_, _, err := mhalib.Forward(goBackend(), context.New(), x, x, x, 3, nil)
	fmt.Println(firstLine(err.Error()))

	out, weights, err := mhalib.Forward(goBackend(), context.New(), x, x, x, 2, func(b *mhalib.MHABuilder) {
		pad := Const(b.Graph(), [][]bool{{false, false, true}, {false, false, false}}) // batch 0: last key is padding
		b.KeyPaddingMask(mhalib.MaskBlockedWhereTrue(pad))
	})
	fmt.Println(out.Shape(), weights.Shape(), err)
	// Output:
	// mhalib: numHeads: 3 does not divide embed dim 10 of query shape (Float32)[2 3 10]: give HeadSizes for uneven heads
	// (Float32)[2 3 10] (Float32)[2 2 3 3] <nil>
}
