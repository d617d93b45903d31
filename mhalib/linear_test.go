package mhalib_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

func TestLinearMatchesReference(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, useBias := range []bool{true, false} {
			rng := rand.New(rand.NewPCG(1, 1))
			x := mhatest.Rand(rng, -1, 1, 2, 3, 5)
			w := mhatest.Rand(rng, -1, 1, 4, 5)
			b := mhatest.Rand(rng, -1, 1, 4)
			ctx := context.New()
			sub := ctx.In("lin")
			sub.VariableWithValue("weight", toTensor(w, dtypes.Float64))
			if useBias {
				sub.VariableWithValue("bias", toTensor(b, dtypes.Float64))
			} else {
				b = nil
			}
			exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) *Node {
				return mhalib.Linear(ctx.In("lin"), x, 4, useBias)
			})
			got := exec.MustExec(toTensor(x, dtypes.Float64))[0]
			assertClose(t, "Linear", got, mhatest.Linear(x, w, b), 1e-14)
		}
	})
}

// A one-row Linear (a decoding step) adds its bias to the very product it computes without
// one, bit for bit, on every backend. On XLA's CPU backend applyLinear adds it as y − (−b), to
// keep XLA from fusing the Add into the matrix-vector product (cmd/mhalab's
// TestHLOOneRowBiasNotFused checks the HLO): this checks that the form changes no bit.
func TestLinearOneRowBiasApart(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(7, 7))
		const in, out = 96, 80
		ctx := context.New()
		sub := ctx.In("lin")
		sub.VariableWithValue("weight", toTensor(mhatest.Rand(rng, -1, 1, out, in), dtypes.Float32))
		b := mhatest.Rand(rng, -1, 1, out)
		sub.VariableWithValue("bias", toTensor(b, dtypes.Float32))
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) (*Node, *Node) {
			return mhalib.Linear(ctx.In("lin"), x, out, true), mhalib.Linear(ctx.In("lin"), x, out, false) // [1, 1, out] each
		})
		res := exec.MustExec(toTensor(mhatest.Rand(rng, -1, 1, 1, 1, in), dtypes.Float32))
		withBias, product := tensors.MustCopyFlatData[float32](res[0]), tensors.MustCopyFlatData[float32](res[1])
		for i := range out {
			if want := product[i] + float32(b.Data[i]); withBias[i] != want {
				t.Fatalf("Linear of one row with bias, element %d: %v, want the product without bias + b = %v + %v = %v",
					i, withBias[i], product[i], float32(b.Data[i]), want)
			}
		}
	})
}

// values returns a variable's value as float64.
func values(t *testing.T, ctx *context.Context, scope, name string) []float64 {
	t.Helper()
	v := ctx.GetVariableByScopeAndName(scope, name)
	if v == nil {
		t.Fatalf("no variable %s/%s", scope, name)
	}
	return tensors.MustCopyFlatData[float64](v.MustValue())
}

// checkUniform checks that xs look like U(−bound, bound): inside the bound, reaching near it,
// mean ≈ 0 and variance ≈ bound²/3.
func checkUniform(t *testing.T, what string, xs []float64, bound float64) {
	t.Helper()
	maxAbs, mean, sq := 0.0, 0.0, 0.0
	for _, x := range xs {
		maxAbs = math.Max(maxAbs, math.Abs(x))
		mean += x
		sq += x * x
	}
	n := float64(len(xs))
	mean /= n
	variance := sq/n - mean*mean
	if maxAbs > bound || maxAbs < 0.9*bound {
		t.Errorf("%s: max |w| = %g, want just under the bound %g", what, maxAbs, bound)
	}
	if math.Abs(mean) > 0.1*bound || math.Abs(variance/(bound*bound/3)-1) > 0.15 {
		t.Errorf("%s: mean %g, variance %g, want 0 and %g", what, mean, variance, bound*bound/3)
	}
}

func checkZero(t *testing.T, what string, xs []float64) {
	t.Helper()
	for _, x := range xs {
		if x != 0 {
			t.Fatalf("%s: %g, want all zero", what, x)
		}
	}
}

func TestInitialisers(t *testing.T) {
	if d := mhalib.XavierBound(64, 192) - math.Sqrt(6.0/256); d != 0 {
		t.Errorf("XavierBound(64, 192) off by %g", d)
	}
	if mhalib.XavierBound(100, 300) != mhatest.XavierBound(100, 300) {
		t.Errorf("XavierBound differs from mhatest's")
	}
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const E, in = 64, 96
		build := func(init mhalib.Init) *context.Context {
			ctx := context.New()
			ctx.SetParam(context.ParamInitialSeed, int64(42))
			mhalib.WithInit(ctx, init)
			exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x, y *Node) []*Node {
				lin := mhalib.Linear(ctx.In("lin"), y, E, true)
				out := mhalib.MultiHeadAttention(ctx, x, x, x, 4).AddBiasKV(true).Done()
				sep := mhalib.MultiHeadAttention(ctx, x, y, y, 4).Scope("sep").Done()
				return []*Node{lin, out, sep}
			})
			x := tensors.FromShape(shapes.Make(dtypes.Float64, 1, 2, E))
			y := tensors.FromShape(shapes.Make(dtypes.Float64, 1, 2, in))
			exec.MustExec(x, y)
			return ctx
		}
		mha, sep := "/"+mhalib.DefaultScope, "/sep"
		t.Run("XavierUniform", func(t *testing.T) {
			ctx := build(mhalib.InitXavierUniform)
			checkUniform(t, "Linear weight", values(t, ctx, "/lin", "weight"), mhalib.XavierBound(in, E))
			checkZero(t, "Linear bias", values(t, ctx, "/lin", "bias"))
			checkUniform(t, "in_proj_weight", values(t, ctx, mha, "in_proj_weight"), mhalib.XavierBound(E, 3*E))
			checkZero(t, "in_proj_bias", values(t, ctx, mha, "in_proj_bias"))
			checkUniform(t, "out_proj.weight", values(t, ctx, mha+"/out_proj", "weight"), mhalib.XavierBound(E, E))
			checkZero(t, "out_proj.bias", values(t, ctx, mha+"/out_proj", "bias"))
			checkUniform(t, "k_proj_weight", values(t, ctx, sep, "k_proj_weight"), mhalib.XavierBound(in, E))
			checkUniform(t, "q_proj_weight", values(t, ctx, sep, "q_proj_weight"), mhalib.XavierBound(E, E))
		})
		t.Run("TorchLinear", func(t *testing.T) {
			ctx := build(mhalib.InitTorchLinear)
			checkUniform(t, "Linear weight", values(t, ctx, "/lin", "weight"), mhatest.KaimingUniformBound(in))
			bias := values(t, ctx, "/lin", "bias")
			for _, b := range bias {
				if math.Abs(b) > 1/math.Sqrt(in) {
					t.Fatalf("Linear bias %g outside ±1/√%d", b, in)
				}
			}
			inBias := values(t, ctx, sep, "in_proj_bias") // q part bound 1/√E, k and v parts 1/√in
			for j, b := range inBias {
				bound := 1 / math.Sqrt(in)
				if j < E {
					bound = 1 / math.Sqrt(E)
				}
				if math.Abs(b) > bound {
					t.Fatalf("in_proj_bias[%d] = %g outside ±%g", j, b, bound)
				}
			}
			checkUniform(t, "k_proj_weight", values(t, ctx, sep, "k_proj_weight"), 1/math.Sqrt(in))
		})
		t.Run("TorchMHA", func(t *testing.T) {
			ctx := build(mhalib.InitTorchMHA)
			checkUniform(t, "in_proj_weight", values(t, ctx, mha, "in_proj_weight"), mhalib.XavierBound(E, 3*E))
			checkZero(t, "in_proj_bias", values(t, ctx, mha, "in_proj_bias"))
			checkUniform(t, "out_proj.weight", values(t, ctx, mha+"/out_proj", "weight"), 1/math.Sqrt(E))
			checkZero(t, "out_proj.bias", values(t, ctx, mha+"/out_proj", "bias"))
			bk := values(t, ctx, mha, "bias_k")
			sq := 0.0
			for _, x := range bk {
				sq += x * x
			}
			if std := math.Sqrt(sq / float64(len(bk))); math.Abs(std*math.Sqrt(E)-1) > 0.3 {
				t.Errorf("bias_k std %g, want about 1/√E = %g (xavier_normal_)", std, 1/math.Sqrt(E))
			}
		})
	})
}
