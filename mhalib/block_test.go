package mhalib_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

func TestPreLNBlockMatchesReference(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, causal := range []mhalib.Causal{mhalib.NoCausal, mhalib.CausalTopLeft} {
			t.Run(causal.String(), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(6, uint64(causal)))
				B, L, E, h := 2, 4, 8, 2
				p := randParams(rng, E, h, E, E, nil, true, false, false)
				lnW, lnB := mhatest.Rand(rng, 0.5, 1.5, E), mhatest.Rand(rng, -0.5, 0.5, E)
				x := mhatest.Rand(rng, -1, 1, B, L, E)
				cot := mhatest.Rand(rng, -1, 1, B, L, E)
				opts := mhatest.MHAOptions{Causal: causalRef(causal)}
				want, err := mhatest.PreLNBlock(x, lnW, lnB, p, opts)
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.New()
				if err := mhalib.LoadStateDict(ctx, "attn", stateDict(p, true, dtypes.Float64)); err != nil {
					t.Fatal(err)
				}
				ctx.In("norm").VariableWithValue("weight", toTensor(lnW, dtypes.Float64))
				ctx.In("norm").VariableWithValue("bias", toTensor(lnB, dtypes.Float64))
				exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x, cot *Node) []*Node {
					y := mhalib.PreLNBlock(ctx, x, h).Causal(causal).Dropout(ctx, 0.5).Done() // dropout: inference, no effect
					loss := ReduceAllSum(Mul(y, cot))
					grads := Gradient(loss, x, ctx.In("norm").GetVariable("weight").ValueGraph(x.Graph()))
					return append([]*Node{y}, grads...)
				})
				res := exec.MustExec(toTensor(x, dtypes.Float64), toTensor(cot, dtypes.Float64))
				assertClose(t, "block output", res[0], want, 1e-12)
				loss := func() float64 {
					y, err := mhatest.PreLNBlock(x, lnW, lnB, p, opts)
					if err != nil {
						panic(err)
					}
					return mhatest.Loss(y, cot)
				}
				assertClose(t, "d loss/d x", res[1], mhatest.NumGrad(loss, x, 1e-6), 1e-7)
				assertClose(t, "d loss/d norm.weight", res[2], mhatest.NumGrad(loss, lnW, 1e-6), 1e-7)
			})
		}
	})
}

// In training mode the block's dropout changes the output; in inference it does not.
func TestPreLNBlockDropoutOnlyInTraining(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(8, 8))
		x := toTensor(mhatest.Rand(rng, -1, 1, 2, 5, 8), dtypes.Float64)
		ctx := context.New()
		ctx.SetParam(context.ParamInitialSeed, int64(3))
		run := func(training bool, rate float64) *mhatest.Tensor {
			exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) *Node {
				ctx.SetTraining(x.Graph(), training)
				return mhalib.PreLNBlock(ctx, x, 2).Dropout(ctx, rate).Done()
			})
			return fromTensor(t, exec.MustExec(x)[0])
		}
		plain := run(false, 0)
		if d, _ := mhatest.MaxAbsDiff(plain, run(false, 0.5)); d != 0 {
			t.Errorf("inference: dropout changed the block output by %g", d)
		}
		if d, _ := mhatest.MaxAbsDiff(plain, run(true, 0.5)); d == 0 {
			t.Errorf("training: dropout 0.5 left the block output unchanged")
		}
	})
}
