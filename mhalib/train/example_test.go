package train_test

import (
	"fmt"
	"math"

	"github.com/mhalab/mhalab/internal/tensortest"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/train"
)

// Gradients of a stack of two pre-LN attention blocks, with checkpointing (each block
// recomputed in its own backward graph) and with plain autodiff of one graph: the same numbers.
func ExampleCheckpointStack() {
	ctx := context.New()
	ctx.SetParam(context.ParamInitialSeed, int64(1))
	block := func(ctx *context.Context, x *Node) *Node {
		return mhalib.PreLNBlock(ctx, x, 2).Causal(mhalib.CausalTopLeft).Done()
	}
	loss := func(ctx *context.Context, y *Node) *Node { return ReduceAllMean(Square(y)) }
	stack, _ := train.NewCheckpointStack(goBackend(), ctx, 2, block, loss)
	defer stack.Finalize()

	x := tensortest.Ramp(2, 5, 8) // [B=2, L=5, E=8]
	ckpt, _ := stack.Gradients(x)
	plain, _ := stack.GradientsAutodiff(x)
	worst := tensortest.MaxAbsDiff(ckpt.Input, plain.Input)
	for name, g := range plain.Variables {
		worst = math.Max(worst, tensortest.MaxAbsDiff(ckpt.Variables[name], g))
	}
	fmt.Println("variables:", len(ckpt.Variables))
	fmt.Println("same loss:", math.Abs(ckpt.Loss-plain.Loss) < 1e-6)
	fmt.Println("same gradients:", worst < 1e-6)
	// Output:
	// variables: 12
	// same loss: true
	// same gradients: true
}
