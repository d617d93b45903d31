package fastgo_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/dotgrad"
)

// TestMultiHeadAttentionMatchesGoMLX runs mhalib's self-attention — forward and the gradient
// of Σ out ⊙ w with respect to the input — with fastgo on (its kernels, and mhalib/dotgrad's
// gradient of DotGeneral, which importing fastgo installs) and off (GoMLX's kernels and GoMLX's
// gradient: with dotgrad's many small DotGenerals GoMLX v0.26's parallel executor can deadlock
// in its DotGeneral, which this package's kernel never waits on), plain and
// flash, with and without a causal mask, and checks that fastgo computed DotGeneral and the
// element-wise ops. Error model: both are float32 computations of the same attention whose sums
// run in other orders (DotGeneral) and whose exp differs by ≤ 2 ulp, so they agree to a few
// units of float32 rounding of the largest value times the longest sum:
// |fast − gomlx| ≤ 8·(k+1)·u·max|gomlx| per output, k = max(L, E).
func TestMultiHeadAttentionMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 6))
	const B, L, E, H = 2, 37, 48, 4
	x := randomInput(rng, dtypes.Float32, []int{B, L, E}, false)
	w := randomInput(rng, dtypes.Float32, []int{B, L, E}, false)
	for _, c := range []struct {
		name   string
		form   mhalib.Formulation
		causal mhalib.Causal
	}{
		{"plain", mhalib.HeadParallel, mhalib.NoCausal},
		{"plain_causal", mhalib.HeadParallel, mhalib.CausalTopLeft},
		{"flash", mhalib.Flash, mhalib.NoCausal},
		{"flash_causal", mhalib.Flash, mhalib.CausalTopLeft},
	} {
		t.Run(c.name, func(t *testing.T) {
			once := func(on bool) []*tensors.Tensor {
				prev := fastgo.SetEnabled(on)
				defer fastgo.SetEnabled(prev)
				if !on { // GoMLX's own kernels and its own gradient of DotGeneral: GoMLX v0.26 as it is
					dotgrad.Uninstall()
					defer dotgrad.Install()
				}
				ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
				ctx.SetParam(context.ParamInitialSeed, int64(1))
				exec := context.MustNewExec(forFastgo(backend, on), ctx, func(ctx *context.Context, x, w *Node) []*Node {
					attn := mhalib.MultiHeadAttention(ctx, x, x, x, H).Causal(c.causal).Formulation(c.form)
					if c.form == mhalib.Flash {
						attn = attn.FlashBlockSizes(16, 8)
					}
					out := attn.Done()                              // [B, L, E]
					dx := Gradient(ReduceAllSum(Mul(out, w)), x)[0] // [B, L, E]
					return []*Node{out, dx}
				})
				defer exec.Finalize()
				return exec.MustExec(argsFor(on, x, w)...)
			}
			before := map[backends.OpType]int64{}
			for _, op := range fastgo.Ops() {
				before[op] = fastgo.OpCalls(op)
			}
			fast := once(true)
			for _, op := range []backends.OpType{backends.OpTypeDotGeneral, backends.OpTypeExp, backends.OpTypeReduceMax,
				backends.OpTypeTranspose, backends.OpTypeMul} {
				if fastgo.OpCalls(op) == before[op] {
					t.Errorf("fastgo computed no %s node (%s)", op, fastgo.Status())
				}
			}
			gomlx := once(false)
			for i, name := range []string{"output", "d/dx"} {
				f, g := flat64(fast[i]), flat64(gomlx[i])
				scale := 0.0
				for _, v := range g {
					scale = math.Max(scale, math.Abs(v))
				}
				bound := 8 * float64(max(L, E)+1) * 0x1p-24 * scale
				worst := 0.0
				for j := range f {
					worst = math.Max(worst, math.Abs(f[j]-g[j]))
					if !(math.Abs(f[j]-g[j]) <= bound) {
						t.Fatalf("%s[%d]: fastgo %g, GoMLX %g: difference %.3g > %.3g", name, j, f[j], g[j], math.Abs(f[j]-g[j]), bound)
					}
				}
				t.Logf("%s: largest difference from GoMLX's kernels %.3g (bound %.3g)", name, worst, bound)
			}
		})
	}
}
