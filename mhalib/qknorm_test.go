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

// QK-norm then RoPE then GQA attention, against the float64 references, with gradients of q,
// k and the norm weights.
func TestQKNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	q := mhatest.Rand(rng, -2, 2, 2, 4, 3, 6)
	k := mhatest.Rand(rng, -2, 2, 2, 2, 5, 6)
	v := mhatest.Rand(rng, -1, 1, 2, 2, 5, 6)
	wq := mhatest.Rand(rng, 0.5, 1.5, 6)
	wk := mhatest.Rand(rng, 0.5, 1.5, 6)
	cot := mhatest.Rand(rng, -1, 1, 2, 4, 3, 6)
	const eps = 1e-6
	ref := func() *mhatest.Tensor {
		rope := mhatest.RoPESpec{Theta: 1e6, Offset: 2}
		qn := mhatest.RoPE(mhatest.RMSNorm(q, wq, eps), rope)
		rope.Offset = 0
		kn := mhatest.RoPE(mhatest.RMSNorm(k, wk, eps), rope)
		out, _ := mhatest.Attention(qn, kn, v, mhatest.AttentionSpec{Causal: mhatest.BottomRight})
		return out
	}
	want := ref()
	loss := func() float64 { return mhatest.Loss(ref(), cot) }
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		dt := dtypes.Float64
		ctx := context.New()
		ctx.In("q_norm").VariableWithValue("weight", toTensor(wq, dt))
		ctx.In("k_norm").VariableWithValue("weight", toTensor(wk, dt))
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, in []*Node) []*Node {
			q, k, v, cot := in[0], in[1], in[2], in[3]
			qn, kn := mhalib.QKNorm(ctx, q, k, eps)
			qn = mhalib.RoPE(qn).Theta(1e6).Offset(2).Done()
			kn = mhalib.RoPE(kn).Theta(1e6).Done()
			// GQA by hand here (the SDPA option is tested elsewhere): repeat each kv head twice.
			rep := func(x *Node) *Node {
				B, H, L, d := x.Shape().Dim(0), x.Shape().Dim(1), x.Shape().Dim(2), x.Shape().Dim(3)
				return Reshape(BroadcastToDims(Reshape(x, B, H, 1, L, d), B, H, 2, L, d), B, 2*H, L, d)
			}
			out, _ := mhalib.ScaledDotProductAttention(qn, rep(kn), rep(v)).Causal(mhalib.CausalBottomRight).DoneWithWeights()
			l := ReduceAllSum(Mul(out, cot))
			wqv := ctx.In("q_norm").GetVariableByScopeAndName(ctx.In("q_norm").Scope(), "weight").ValueGraph(q.Graph())
			return append([]*Node{out}, Gradient(l, q, k, wqv)...)
		})
		res, err := exec.Exec(toTensor(q, dt), toTensor(k, dt), toTensor(v, dt), toTensor(cot, dt))
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, "output", res[0], want, 1e-12)
		for i, x := range []*mhatest.Tensor{q, k, wq} {
			assertClose(t, []string{"dq", "dk", "dwq"}[i], res[1+i], mhatest.NumGrad(loss, x, 1e-6), 1e-7)
		}
	})
}
