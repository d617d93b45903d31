package mhalib_test

import (
	"fmt"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// A Program compiles multi-head attention once per shape and runs it many times.
func ExampleProgram() {
	ctx := context.New()
	ctx.SetRNGStateFromSeed(1)
	p, err := mhalib.NewProgram(goBackend(), ctx, 2, func(b *mhalib.MHABuilder) { b.Causal(mhalib.CausalTopLeft) })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Finalize()
	for _, dims := range [][]int{{2, 3, 8}, {2, 3, 8}, {2, 3, 8}, {1, 5, 8}} {
		x := ramp(dims...)
		out, weights, err := p.Run(x, x, x)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(out.Shape(), weights.Shape(), "compilations:", p.Compilations())
	}
	// Output:
	// (Float32)[2 3 8] (Float32)[2 2 3 3] compilations: 1
	// (Float32)[2 3 8] (Float32)[2 2 3 3] compilations: 1
	// (Float32)[2 3 8] (Float32)[2 2 3 3] compilations: 1
	// (Float32)[1 5 8] (Float32)[1 2 5 5] compilations: 2
}

// MultiHeadAttention takes the options of ScaledDotProductAttention and FlashAttention
// (AttentionOptions): here a sliding window of the previous key and the query's own.
func ExampleMHABuilder_Window() {
	ctx := context.New()
	ctx.SetRNGStateFromSeed(1)
	exec := context.MustNewExec(goBackend(), ctx, func(ctx *context.Context, x *Node) (*Node, *Node) {
		return mhalib.MultiHeadAttention(ctx, x, x, x, 2).
			Causal(mhalib.CausalTopLeft).
			Window(1, 0, mhalib.AlignTopLeft).
			DoneWithWeights() // [B, h, Lq, Lk]
	})
	w := tensors.MustCopyFlatData[float32](exec.MustExec(ramp(1, 4, 8))[1]) // [1, 2, 4, 4]
	for i := range 4 {                                                      // head 0: which keys each query sees
		row := ""
		for j := range 4 {
			row += map[bool]string{true: " x", false: " ."}[w[i*4+j] > 0]
		}
		fmt.Println(row)
	}
	// Output:
	//  x . . .
	//  x x . .
	//  . x x .
	//  . . x x
}
