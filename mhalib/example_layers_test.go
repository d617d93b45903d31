package mhalib_test

import (
	"errors"
	"fmt"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// y = x·Wᵀ + b with W [out=2, in=3] in PyTorch's layout.
func ExampleLinear() {
	ctx := context.New()
	ctx.In("proj").VariableWithValue("weight", [][]float32{{1, 0, 0}, {1, 1, 1}}) // [out, in]
	ctx.In("proj").VariableWithValue("bias", []float32{10, 20})                   // [out]
	exec := context.MustNewExec(goBackend(), ctx, func(ctx *context.Context, x *Node) *Node {
		return mhalib.Linear(ctx.In("proj"), x, 2, true)
	})
	fmt.Println(exec.MustExec([][]float32{{1, 2, 3}})[0].Value())
	// Output:
	// [[11 26]]
}

// Initialisers: PyTorch's Xavier-uniform bound for the fused in_proj_weight [3E, E].
func ExampleXavierBound() {
	const E = 512
	fmt.Printf("in_proj_weight: ±%.4f\n", mhalib.XavierBound(E, 3*E))
	fmt.Printf("q_proj_weight:  ±%.4f\n", mhalib.XavierBound(E, E))
	// Output:
	// in_proj_weight: ±0.0541
	// q_proj_weight:  ±0.0765
}

// WithInit selects PyTorch's nn.Linear default initialisation for the layers built under ctx.
func ExampleWithInit() {
	ctx := mhalib.WithInit(context.New(), mhalib.InitTorchLinear)
	exec := context.MustNewExec(goBackend(), ctx, func(ctx *context.Context, x *Node) *Node {
		return mhalib.Linear(ctx.In("fc"), x, 3, true)
	})
	exec.MustExec([][]float32{{1, 2, 3, 4}})
	w := tensors.MustCopyFlatData[float32](ctx.GetVariableByScopeAndName("/fc", "weight").MustValue())
	inside := true
	for _, x := range w {
		inside = inside && x >= -0.5 && x <= 0.5 // 1/√fan_in = 1/√4
	}
	fmt.Println(len(w), "weights within ±1/√4:", inside)
	// Output:
	// 12 weights within ±1/√4: true
}

// Splitting the width into heads and back, with the shapes.
func ExampleSplitHeads() {
	shapes := MustExecOnceN(goBackend(), func(x *Node) []*Node {
		heads := mhalib.SplitHeads(x, 4)   // [2, 3, 8] → [2, 4, 3, 2]
		merged := mhalib.MergeHeads(heads) // → [2, 3, 8]
		return []*Node{heads, merged}
	}, ramp(2, 3, 8))
	fmt.Println(shapes[0].Shape(), shapes[1].Shape())
	// Output:
	// (Float32)[2 4 3 2] (Float32)[2 3 8]
}

// d_model 440 with heads of 100: four of 100 and one of 40.
func ExampleHeadSizesFor() {
	fmt.Println(mhalib.HeadSizesFor(440, 100))
	// Output:
	// [100 100 100 100 40]
}

// The three layouts of uneven heads.
func ExampleSplitUnevenHeads() {
	sizes := []int{3, 3, 3, 1}
	for _, s := range []mhalib.HeadStrategy{mhalib.HeadsLoop, mhalib.HeadsSlice, mhalib.HeadsPad} {
		parts := MustExecOnceN(goBackend(), func(x *Node) []*Node {
			return mhalib.SplitUnevenHeads(x, sizes, s)
		}, ramp(2, 5, 10))
		fmt.Printf("%-10s", s)
		for _, p := range parts {
			fmt.Print(" ", p.Shape().Dimensions)
		}
		fmt.Println()
	}
	// Output:
	// HeadsLoop  [2 1 5 3] [2 1 5 3] [2 1 5 3] [2 1 5 1]
	// HeadsSlice [2 3 5 3] [2 1 5 1]
	// HeadsPad   [2 4 5 3]
}

// A pre-LayerNorm residual block: x + MHA(LN(x)).
func ExamplePreLNBlock() {
	ctx := context.New()
	exec := context.MustNewExec(goBackend(), ctx, func(ctx *context.Context, x *Node) *Node {
		return mhalib.PreLNBlock(ctx, x, 2).Causal(mhalib.CausalTopLeft).Done()
	})
	fmt.Println(exec.MustExec(ramp(2, 4, 8))[0].Shape())
	fmt.Println(ctx.GetVariableByScopeAndName("/norm", "weight").Shape(), ctx.GetVariableByScopeAndName("/attn", "in_proj_weight").Shape())
	// Output:
	// (Float32)[2 4 8]
	// (Float32)[8] (Float32)[24 8]
}

// Every bad argument is an *ArgumentError: its message names the argument and the shapes, and
// errors.Is(err, ErrInvalidArgument) holds.
func ExampleArgumentError() {
	exec := context.MustNewExec(goBackend(), context.New(), func(ctx *context.Context, q, k *Node) *Node {
		return mhalib.MultiHeadAttention(ctx, q, k, k, 2).Done()
	})
	_, err := exec.Exec(ramp(2, 3, 8), ramp(3, 5, 8))
	fmt.Println(firstLine(err.Error()))
	fmt.Println(errors.Is(err, mhalib.ErrInvalidArgument))
	// Output:
	// mhalib: key: shape (Float32)[3 5 8]: batch 3 differs from query shape (Float32)[2 3 8]
	// true
}
