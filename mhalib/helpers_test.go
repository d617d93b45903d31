package mhalib_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/tensortest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// dotGeneralRuleAtStart is the DotGeneral gradient registered in GoMLX once every package of
// the test binary was loaded, before any test ran (TestImportLeavesGoMLXDotGeneralGradient).
var dotGeneralRuleAtStart VJP

func TestMain(m *testing.M) {
	dotGeneralRuleAtStart = VJPRegistration[NodeTypeDotGeneral]
	backendtest.Main(m, "mhalib")
}

// toTensor, fromTensor and assertClose: see internal/tensortest.
func toTensor(x *mhatest.Tensor, dtype dtypes.DType) *tensors.Tensor {
	return tensortest.ToTensor(x, dtype)
}

func fromTensor(t *testing.T, x *tensors.Tensor) *mhatest.Tensor { return tensortest.FromTensor(t, x) }

func assertClose(t *testing.T, what string, got *tensors.Tensor, want *mhatest.Tensor, tol float64) {
	t.Helper()
	tensortest.AssertClose(t, what, got, want, tol)
}

// tolFor is the comparison tolerance for a dtype.
func tolFor(dtype dtypes.DType) float64 {
	if dtype == dtypes.Float32 {
		return 2e-5
	}
	return 1e-12
}

// maskConst turns a reference mask into an mhalib Mask in graph g.
func maskConst(g *Graph, m mhatest.Mask, dtype dtypes.DType) mhalib.Mask {
	switch m.Kind {
	case mhatest.BlockedWhereTrue:
		return mhalib.MaskBlockedWhereTrue(Const(g, tensors.FromFlatDataAndDimensions(append([]bool(nil), m.Bool...), m.Shape...)))
	case mhatest.AttendWhereTrue:
		return mhalib.MaskAttendWhereTrue(Const(g, tensors.FromFlatDataAndDimensions(append([]bool(nil), m.Bool...), m.Shape...)))
	case mhatest.Additive:
		return mhalib.MaskAdditive(Const(g, toTensor(mhatest.FromFloat64(m.Float, m.Shape...), dtype)))
	}
	return mhalib.Mask{}
}

// causalRef maps mhalib's causal enum to the reference's.
func causalRef(c mhalib.Causal) mhatest.Causal {
	switch c {
	case mhalib.CausalTopLeft:
		return mhatest.TopLeft
	case mhalib.CausalBottomRight:
		return mhatest.BottomRight
	}
	return mhatest.NoCausal
}

// randBoolMask returns a random bool mask of the given kind and shape, each entry true with
// probability p (rows may be entirely blocked: mhalib must handle them).
func randBoolMask(rng *rand.Rand, kind mhatest.MaskKind, p float64, shape ...int) mhatest.Mask {
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]bool, n)
	for i := range data {
		data[i] = rng.Float64() < p
	}
	return mhatest.NewBoolMask(kind, data, shape...)
}

// stateDict builds PyTorch state_dict tensors from reference parameters.
func stateDict(p mhatest.MHAParams, fused bool, dtype dtypes.DType) map[string]*tensors.Tensor {
	E := p.E
	sd := map[string]*tensors.Tensor{}
	if fused {
		w := mhatest.New(3*E, E)
		copy(w.Data[0:], p.Wq.Data)
		copy(w.Data[E*E:], p.Wk.Data)
		copy(w.Data[2*E*E:], p.Wv.Data)
		sd["in_proj_weight"] = toTensor(w, dtype)
	} else {
		sd["q_proj_weight"] = toTensor(p.Wq, dtype)
		sd["k_proj_weight"] = toTensor(p.Wk, dtype)
		sd["v_proj_weight"] = toTensor(p.Wv, dtype)
	}
	if p.Bq != nil {
		b := mhatest.New(3 * E)
		copy(b.Data[0:], p.Bq.Data)
		copy(b.Data[E:], p.Bk.Data)
		copy(b.Data[2*E:], p.Bv.Data)
		sd["in_proj_bias"] = toTensor(b, dtype)
	}
	sd["out_proj.weight"] = toTensor(p.Wo, dtype)
	if p.Bo != nil {
		sd["out_proj.bias"] = toTensor(p.Bo, dtype)
	}
	if p.BiasK != nil {
		sd["bias_k"] = toTensor(p.BiasK.Reshape(1, 1, E), dtype)
		sd["bias_v"] = toTensor(p.BiasV.Reshape(1, 1, E), dtype)
	}
	return sd
}

// randParams draws reference weights.
func randParams(rng *rand.Rand, E, h, kdim, vdim int, sizes []int, bias, biasKV, zeroAttn bool) mhatest.MHAParams {
	p := mhatest.MHAParams{E: E, NumHeads: h, HeadSizes: sizes, AddZeroAttn: zeroAttn,
		Wq: mhatest.Rand(rng, -0.5, 0.5, E, E), Wk: mhatest.Rand(rng, -0.5, 0.5, E, kdim),
		Wv: mhatest.Rand(rng, -0.5, 0.5, E, vdim), Wo: mhatest.Rand(rng, -0.5, 0.5, E, E)}
	if bias {
		p.Bq, p.Bk, p.Bv = mhatest.Rand(rng, -0.5, 0.5, E), mhatest.Rand(rng, -0.5, 0.5, E), mhatest.Rand(rng, -0.5, 0.5, E)
		p.Bo = mhatest.Rand(rng, -0.5, 0.5, E)
	}
	if biasKV {
		p.BiasK, p.BiasV = mhatest.Rand(rng, -0.5, 0.5, E), mhatest.Rand(rng, -0.5, 0.5, E)
	}
	return p
}

// newCtx returns a context with reference weights loaded in the default MHA scope.
func newCtx(t *testing.T, p mhatest.MHAParams, fused bool, dtype dtypes.DType) *context.Context {
	t.Helper()
	ctx := context.New()
	if err := mhalib.LoadStateDict(ctx, mhalib.DefaultScope, stateDict(p, fused, dtype)); err != nil {
		t.Fatalf("LoadStateDict: %v", err)
	}
	return ctx
}

// randAdditiveMask returns a float mask of the given shape with values in [-1, 1), each blocked
// (−inf) with probability pInf.
func randAdditiveMask(rng *rand.Rand, pInf float64, shape ...int) mhatest.Mask {
	t := mhatest.Rand(rng, -1, 1, shape...)
	for i := range t.Data {
		if rng.Float64() < pInf {
			t.Data[i] = math.Inf(-1)
		}
	}
	return mhatest.NewAdditiveMask(t)
}
