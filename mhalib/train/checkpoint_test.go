package train_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/tensortest"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
	"github.com/mhalab/mhalab/mhalib/train"
)

// preLNStack is the stack the checkpointing tests use: causal pre-LN attention blocks, and a
// loss Σ Linear(y)² with its own variables.
func preLNStack(backend backends.Backend, numBlocks, heads int) (*train.CheckpointStack, error) {
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
	return train.NewCheckpointStack(backend, ctx, numBlocks, block, loss)
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
		x := tensortest.ToTensor(mhatest.Rand(rng, -1, 1, B, L, E), dtypes.Float64)

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
		tensortest.AssertClose(t, "d loss/d x", ckpt.Input, tensortest.FromTensor(t, plain.Input), 1e-12)
		// Every block's variables (LayerNorm 2, attention 4) and the loss's Linear (2).
		if want := N*6 + 2; len(plain.Variables) != want {
			t.Fatalf("autodiff returned %d variable gradients, want %d: %v", len(plain.Variables), want, keys(plain.Variables))
		}
		if !slices.Equal(keys(ckpt.Variables), keys(plain.Variables)) {
			t.Fatalf("variables: checkpointed %v, autodiff %v", keys(ckpt.Variables), keys(plain.Variables))
		}
		for name, g := range plain.Variables {
			tensortest.AssertClose(t, "d loss/d "+name, ckpt.Variables[name], tensortest.FromTensor(t, g), 1e-12)
		}
		// The gradients are not trivially zero.
		if diff, _ := mhatest.MaxAbsDiff(tensortest.FromTensor(t, ckpt.Variables["/block_0/attn/in_proj_weight"]),
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
		if _, err := train.NewCheckpointStack(backend, context.New(), 0, block,
			func(ctx *context.Context, y *Node) *Node { return ReduceAllSum(y) }); !errors.Is(err, mhalib.ErrInvalidArgument) {
			t.Fatalf("0 blocks: err = %v, want ErrInvalidArgument", err)
		}
		stack, err := train.NewCheckpointStack(backend, context.New(), 2, func(ctx *context.Context, x *Node) *Node {
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

// TestCheckpointSharedVariableGradientsSum: a variable used by several blocks (here one weight
// w shared by both blocks of y = w·(w·x)) gets the sum of every block's contribution, as
// autodiff gives: d(w²·x)/dw = 2·w·x = 8 at w = 2, x = 2. It used to get only the last
// contribution computed (block 0's, 4).
func TestCheckpointSharedVariableGradientsSum(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		block := func(ctx *context.Context, x *Node) *Node {
			w := ctx.InAbsPath("/shared").Checked(false).VariableWithValue("w", 2.0).ValueGraph(x.Graph()) // scalar
			return Mul(x, w)                                                                               // [1, 1]
		}
		loss := func(ctx *context.Context, y *Node) *Node { return ReduceAllSum(y) }
		stack, err := train.NewCheckpointStack(backend, context.New(), 2, block, loss)
		if err != nil {
			t.Fatal(err)
		}
		defer stack.Finalize()
		x := tensors.FromFlatDataAndDimensions([]float64{2}, 1, 1)
		ckpt, err := stack.Gradients(x)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := stack.GradientsAutodiff(x)
		if err != nil {
			t.Fatal(err)
		}
		for what, grads := range map[string]*train.StackGradients{"checkpointed": ckpt, "autodiff": plain} {
			g, ok := grads.Variables["/shared/w"]
			if !ok {
				t.Fatalf("%s: no gradient for /shared/w: %v", what, keys(grads.Variables))
			}
			if got := tensors.ToScalar[float64](g); got != 8 {
				t.Errorf("%s d loss/d w = %g, want 8 (= 2·w·x)", what, got)
			}
		}
		tensortest.AssertClose(t, "d loss/d x", ckpt.Input, mhatest.FromFloat64([]float64{4}, 1, 1), 0)
	})
}

func TestMain(m *testing.M) { backendtest.Main(m, "mhalib/train") }

// goBackend is the pure-Go backend, as the command configures it.
func goBackend() backends.Backend { b, _ := backendtest.Get("go"); return b }
