package mhalib_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// preLNStack is the stack the checkpointing tests use: causal pre-LN attention blocks, and a
// loss Σ Linear(y)² with its own variables.
func preLNStack(backend backends.Backend, numBlocks, heads int) (*mhalib.CheckpointStack, error) {
	ctx := context.New()
	if err := ctx.SetRNGStateFromSeed(3); err != nil {
		return nil, err
	}
	block := func(ctx *context.Context, x *Node) *Node {
		return mhalib.PreLNBlock(ctx, x, heads).Causal(mhalib.CausalTopLeft).Done()
	}
	loss := func(ctx *context.Context, y *Node) *Node {
		return ReduceAllSum(Square(mhalib.Linear(ctx, y, 3, true)))
	}
	return mhalib.NewCheckpointStack(backend, ctx, numBlocks, block, loss)
}

func TestCheckpointGradientsEqualAutodiff(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const N, B, L, E, h = 3, 2, 5, 8, 2
		stack, err := preLNStack(backend, N, h)
		if err != nil {
			t.Fatal(err)
		}
		defer stack.Finalize()
		rng := rand.New(rand.NewPCG(9, 9))
		x := toTensor(mhatest.Rand(rng, -1, 1, B, L, E), dtypes.Float64)

		ckpt, err := stack.Gradients(x)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := stack.GradientsAutodiff(x)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(ckpt.Loss-plain.Loss) > 1e-12*math.Abs(plain.Loss) || ckpt.Loss == 0 {
			t.Fatalf("loss: checkpointed %g, autodiff %g", ckpt.Loss, plain.Loss)
		}
		assertClose(t, "d loss/d x", ckpt.Input, fromTensor(t, plain.Input), 1e-12)
		// Every block's variables (LayerNorm 2, attention 4) and the loss's Linear (2).
		if want := N*6 + 2; len(plain.Variables) != want {
			t.Fatalf("autodiff returned %d variable gradients, want %d: %v", len(plain.Variables), want, keys(plain.Variables))
		}
		if !slices.Equal(keys(ckpt.Variables), keys(plain.Variables)) {
			t.Fatalf("variables: checkpointed %v, autodiff %v", keys(ckpt.Variables), keys(plain.Variables))
		}
		for name, g := range plain.Variables {
			assertClose(t, "d loss/d "+name, ckpt.Variables[name], fromTensor(t, g), 1e-12)
		}
		// The gradients are not trivially zero.
		if diff, _ := mhatest.MaxAbsDiff(fromTensor(t, ckpt.Variables["/block_0/attn/in_proj_weight"]),
			mhatest.New(3*E, E)); diff == 0 {
			t.Fatal("gradient of block 0's in_proj_weight is all zero")
		}
	})
}

func keys(m map[string]*tensors.Tensor) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestCheckpointStackErrors(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		block := func(ctx *context.Context, x *Node) *Node { return x }
		if _, err := mhalib.NewCheckpointStack(backend, context.New(), 0, block,
			func(ctx *context.Context, y *Node) *Node { return ReduceAllSum(y) }); !errors.Is(err, mhalib.ErrInvalidArgument) {
			t.Fatalf("0 blocks: err = %v, want ErrInvalidArgument", err)
		}
		stack, err := mhalib.NewCheckpointStack(backend, context.New(), 2, func(ctx *context.Context, x *Node) *Node {
			return mhalib.Linear(ctx, x, 4, false)
		}, func(ctx *context.Context, y *Node) *Node { return y }) // not a scalar
		if err != nil {
			t.Fatal(err)
		}
		defer stack.Finalize()
		x := tensors.FromFlatDataAndDimensions(make([]float32, 8), 2, 4)
		if _, err := stack.Gradients(x); err == nil || !strings.Contains(err.Error(), "mhalib: loss: shape (Float32)[2 4]: the loss must be a scalar") {
			t.Fatalf("non-scalar loss: err = %v", err)
		}
	})
}
