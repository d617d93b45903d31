package mhalib_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

func TestMHASmoke(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(1, 2))
		B, L, E, h := 2, 3, 8, 2
		p := randParams(rng, E, h, E, E, nil, true, false, false)
		x := mhatest.Rand(rng, -1, 1, B, L, E)
		want, wantW, err := mhatest.MHA(p, x, x, x, mhatest.MHAOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := newCtx(t, p, true, dtypes.Float64)
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) (*Node, *Node) {
			return mhalib.MultiHeadAttention(ctx, x, x, x, h).DoneWithWeights(false)
		})
		out := exec.MustExec(toTensor(x, dtypes.Float64))
		assertClose(t, backend, "output", out[0], want, 1e-12)
		assertClose(t, backend, "weights", out[1], wantW, 1e-12)
	})
}
