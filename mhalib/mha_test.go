package mhalib_test

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/inspect"
	"github.com/mhalab/mhalab/mhalib/mhatest"
	"github.com/mhalab/mhalab/mhalib/train"
)

// mhaCase is one configuration of MultiHeadAttention compared against mhatest.MHA.
type mhaCase struct {
	name                        string
	B, Lq, Lk, E, kdim, vdim, h int
	sizes                       []int // uneven head sizes, nil = even
	noBias, biasKV, zeroAttn    bool
	separate                    bool // load q/k/v_proj_weight instead of in_proj_weight
	self                        bool // query = key = value
	attn, keyPad                func(c *mhaCase, rng *rand.Rand) mhatest.Mask
	causal                      mhalib.Causal
	fill, scale                 float64
	formulation                 mhalib.Formulation
	strategy                    *mhalib.HeadStrategy
	dtype                       dtypes.DType
	average                     bool // compare head-averaged weights
}

func (c *mhaCase) defaults() {
	if c.B == 0 {
		c.B = 2
	}
	if c.Lq == 0 {
		c.Lq = 3
	}
	if c.Lk == 0 {
		c.Lk = 4
	}
	if c.self {
		c.Lk = c.Lq
	}
	if c.E == 0 {
		c.E = 8
	}
	if c.kdim == 0 {
		c.kdim = c.E
	}
	if c.vdim == 0 {
		c.vdim = c.E
	}
	if c.h == 0 {
		c.h = 2
	}
	if c.sizes != nil {
		c.h = len(c.sizes)
	}
	if c.dtype == dtypes.InvalidDType {
		c.dtype = dtypes.Float64
	}
}

func strategyPtr(s mhalib.HeadStrategy) *mhalib.HeadStrategy { return &s }

// Mask generators.
func attn2D(kind mhatest.MaskKind) func(c *mhaCase, rng *rand.Rand) mhatest.Mask {
	return func(c *mhaCase, rng *rand.Rand) mhatest.Mask {
		m := randBoolMask(rng, kind, 0.4, c.Lq, c.Lk)
		return m
	}
}

func attnShape(kind mhatest.MaskKind, shape func(c *mhaCase) []int) func(c *mhaCase, rng *rand.Rand) mhatest.Mask {
	return func(c *mhaCase, rng *rand.Rand) mhatest.Mask { return randBoolMask(rng, kind, 0.4, shape(c)...) }
}

func additive(shape func(c *mhaCase) []int) func(c *mhaCase, rng *rand.Rand) mhatest.Mask {
	return func(c *mhaCase, rng *rand.Rand) mhatest.Mask { return randAdditiveMask(rng, 0.25, shape(c)...) }
}

func padMask(kind mhatest.MaskKind) func(c *mhaCase, rng *rand.Rand) mhatest.Mask {
	return func(c *mhaCase, rng *rand.Rand) mhatest.Mask {
		data := make([]bool, c.B*c.Lk)
		for b := range c.B {
			for j := range c.Lk {
				pad := j >= c.Lk-1-b // batch b pads its last b+1 keys
				data[b*c.Lk+j] = pad
				if kind == mhatest.AttendWhereTrue {
					data[b*c.Lk+j] = !pad
				}
			}
		}
		return mhatest.NewBoolMask(kind, data, c.B, c.Lk)
	}
}

// fullyPadded pads every key of batch element 1: its queries see nothing.
func fullyPadded(c *mhaCase, rng *rand.Rand) mhatest.Mask {
	data := make([]bool, c.B*c.Lk)
	for j := range c.Lk {
		data[1*c.Lk+j] = true
	}
	return mhatest.NewBoolMask(mhatest.BlockedWhereTrue, data, c.B, c.Lk)
}

func floatPad(c *mhaCase, rng *rand.Rand) mhatest.Mask {
	t := mhatest.New(c.B, c.Lk)
	for b := range c.B {
		for j := range c.Lk {
			t.Set(rng.Float64()-0.5, b, j)
		}
		t.Set(math.Inf(-1), b, c.Lk-1)
	}
	return mhatest.NewAdditiveMask(t)
}

var (
	shape2D   = func(c *mhaCase) []int { return []int{c.Lq, c.Lk} }
	shape3D   = func(c *mhaCase) []int { return []int{c.B * c.h, c.Lq, c.Lk} }
	shape4D   = func(c *mhaCase) []int { return []int{c.B, c.h, c.Lq, c.Lk} }
	shape4D1  = func(c *mhaCase) []int { return []int{c.B, 1, c.Lq, c.Lk} }
	sizes442  = []int{4, 4, 2}
	sizes4442 = []int{3, 3, 3, 1} // E = 10, like 440 = 4×100 + 40 but small
)

// mhaCases covers every option of the builder.
func mhaCases() []mhaCase {
	blocked, attend := mhatest.BlockedWhereTrue, mhatest.AttendWhereTrue
	return []mhaCase{
		{name: "self/fused/bias", self: true},
		{name: "self/fused/nobias", self: true, noBias: true},
		{name: "self/averaged", self: true, average: true},
		{name: "cross/Lq!=Lk", Lq: 3, Lk: 5},
		{name: "cross/kdim=5,vdim=6/separate", kdim: 5, vdim: 6, separate: true},
		{name: "cross/separate/kdim=E", separate: true},
		{name: "cross/separate/nobias", kdim: 3, vdim: 7, separate: true, noBias: true},
		{name: "bias_kv", biasKV: true},
		{name: "zero_attn", zeroAttn: true},
		{name: "bias_kv+zero_attn+masks", biasKV: true, zeroAttn: true, attn: attn2D(blocked), keyPad: padMask(blocked)},
		{name: "bias_kv+zero_attn+causal", self: true, biasKV: true, zeroAttn: true, causal: mhalib.CausalTopLeft},
		{name: "attn2D/blocked", attn: attn2D(blocked)},
		{name: "attn2D/attend", attn: attn2D(attend)},
		{name: "attn3D/blocked", attn: attnShape(blocked, shape3D)},
		{name: "attn4D/Bh/attend", attn: attnShape(attend, shape4D)},
		{name: "attn4D/B1/blocked", attn: attnShape(blocked, shape4D1)},
		{name: "attn2D/additive", attn: additive(shape2D)},
		{name: "attn3D/additive", attn: additive(shape3D)},
		{name: "keypad/blocked", keyPad: padMask(blocked)},
		{name: "keypad/attend", keyPad: padMask(attend)},
		{name: "keypad/additive", keyPad: floatPad},
		{name: "keypad/fully-masked-row", keyPad: fullyPadded},
		{name: "causal/top-left/self", self: true, Lq: 4, causal: mhalib.CausalTopLeft},
		{name: "causal/top-left/Lq>Lk", Lq: 5, Lk: 3, causal: mhalib.CausalTopLeft},
		{name: "causal/bottom-right/decode", Lq: 2, Lk: 5, causal: mhalib.CausalBottomRight},
		{name: "causal/bottom-right/Lq>Lk", Lq: 5, Lk: 3, causal: mhalib.CausalBottomRight},
		{name: "all-masks/additive+keypad+causal", self: true, Lq: 4, attn: additive(shape2D), keyPad: padMask(blocked), causal: mhalib.CausalTopLeft},
		{name: "fill-1e9", attn: attn2D(blocked), keyPad: padMask(blocked), fill: mhalib.FillMinus1e9},
		{name: "fill-1e9/fully-masked-rows", Lq: 5, Lk: 3, causal: mhalib.CausalBottomRight, keyPad: fullyPadded,
			attn: additive(shape2D), fill: mhalib.FillMinus1e9},
		{name: "scale=0.3", scale: 0.3, attn: attn2D(blocked)},
		{name: "per-head-loop", formulation: mhalib.PerHeadLoop, attn: attnShape(blocked, shape3D), keyPad: padMask(blocked)},
		{name: "per-head-loop/4heads", E: 8, h: 4, formulation: mhalib.PerHeadLoop, causal: mhalib.CausalBottomRight},
		{name: "even/strategy-pad", strategy: strategyPtr(mhalib.HeadsPad)},
		{name: "uneven/slice(default)", E: 10, sizes: sizes442, attn: attnShape(blocked, shape4D)},
		{name: "uneven/loop", E: 10, sizes: sizes442, strategy: strategyPtr(mhalib.HeadsLoop), attn: attnShape(blocked, shape4D)},
		{name: "uneven/pad", E: 10, sizes: sizes442, strategy: strategyPtr(mhalib.HeadsPad), attn: attnShape(blocked, shape4D)},
		{name: "uneven/per-head-loop", E: 10, sizes: sizes442, formulation: mhalib.PerHeadLoop},
		{name: "uneven/3+3+3+1/pad/all", E: 10, sizes: sizes4442, strategy: strategyPtr(mhalib.HeadsPad),
			biasKV: true, zeroAttn: true, keyPad: padMask(blocked), causal: mhalib.CausalBottomRight, kdim: 6, vdim: 5, separate: true},
		{name: "uneven/3+3+3+1/slice/all", E: 10, sizes: sizes4442, biasKV: true, zeroAttn: true,
			attn: additive(shape3D), average: true},
		{name: "float32/self/masks", self: true, Lq: 5, dtype: dtypes.Float32, attn: attn2D(blocked), keyPad: padMask(blocked)},
		{name: "float32/cross/uneven/bias_kv", dtype: dtypes.Float32, E: 10, sizes: sizes442, biasKV: true, causal: mhalib.CausalBottomRight},
	}
}

// seedOf hashes a name into a seed, so each case has its own fixed random numbers.
func seedOf(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// mhaRun is a prepared case: reference weights, inputs, masks and the reference output.
type mhaRun struct {
	c                 mhaCase
	p                 mhatest.MHAParams
	query, key, value *mhatest.Tensor
	cot               *mhatest.Tensor // cotangent for the loss Σ out ⊙ cot
	opts              mhatest.MHAOptions
	want, wantW       *mhatest.Tensor
}

func prepare(t *testing.T, c mhaCase) *mhaRun {
	t.Helper()
	c.defaults()
	rng := rand.New(rand.NewPCG(seedOf(c.name), 7))
	r := &mhaRun{c: c}
	r.p = randParams(rng, c.E, c.h, c.kdim, c.vdim, c.sizes, !c.noBias, c.biasKV, c.zeroAttn)
	r.query = mhatest.Rand(rng, -1, 1, c.B, c.Lq, c.E)
	r.key, r.value = r.query, r.query
	if !c.self {
		r.key = mhatest.Rand(rng, -1, 1, c.B, c.Lk, c.kdim)
		r.value = mhatest.Rand(rng, -1, 1, c.B, c.Lk, c.vdim)
	}
	r.cot = mhatest.Rand(rng, -1, 1, c.B, c.Lq, c.E)
	r.opts = mhatest.MHAOptions{Causal: causalRef(c.causal), Fill: c.fill, Scale: c.scale}
	if c.attn != nil {
		r.opts.AttnMask = c.attn(&c, rng)
	}
	if c.keyPad != nil {
		r.opts.KeyPaddingMask = c.keyPad(&c, rng)
	}
	var err error
	r.want, r.wantW, err = mhatest.MHA(r.p, r.query, r.key, r.value, r.opts)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	if c.average {
		r.wantW = mhatest.AverageHeads(r.wantW)
	}
	return r
}

// build configures the builder for the case, with masks as constants of the graph.
func (r *mhaRun) build(ctx *context.Context, q, k, v *Node) *mhalib.MHABuilder {
	c := r.c
	g := q.Graph()
	b := mhalib.MultiHeadAttention(ctx, q, k, v, c.h).Causal(c.causal).Formulation(c.formulation)
	if c.sizes != nil {
		b.HeadSizes(c.sizes...)
	}
	if c.noBias {
		b.UseBias(false)
	}
	b.AddBiasKV(c.biasKV).AddZeroAttn(c.zeroAttn).SeparateProjections(c.separate)
	if !r.opts.AttnMask.IsZero() {
		b.AttnMask(maskConst(g, r.opts.AttnMask, c.dtype))
	}
	if !r.opts.KeyPaddingMask.IsZero() {
		b.KeyPaddingMask(maskConst(g, r.opts.KeyPaddingMask, c.dtype))
	}
	if c.fill != 0 {
		b.Fill(c.fill)
	}
	if c.scale != 0 {
		b.Scale(c.scale)
	}
	if c.strategy != nil {
		b.HeadStrategy(*c.strategy)
	}
	return b
}

// inputs returns the input tensors for the graph: x (self) or query, key, value; then the cotangent.
func (r *mhaRun) inputs() []any {
	dt := r.c.dtype
	if r.c.self {
		return []any{toTensor(r.query, dt), toTensor(r.cot, dt)}
	}
	return []any{toTensor(r.query, dt), toTensor(r.key, dt), toTensor(r.value, dt), toTensor(r.cot, dt)}
}

// mhaResult holds what a run of the graph returned.
type mhaResult struct {
	out, weights *tensors.Tensor
	inputGrads   []*tensors.Tensor          // d loss / d (x) or (query, key, value)
	varGrads     map[string]*tensors.Tensor // d loss / d variable, keyed by state_dict name
}

// execute runs the case on backend with weights loaded from the reference; with grads it also
// returns the gradients of Σ out ⊙ cot w.r.t. the inputs and every variable.
func (r *mhaRun) execute(t *testing.T, backend backends.Backend, grads bool, tweak func(b *mhalib.MHABuilder)) mhaResult {
	t.Helper()
	ctx := newCtx(t, r.p, !r.c.separate, r.c.dtype)
	var names []string
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, in []*Node) []*Node {
		q, k, v := in[0], in[0], in[0]
		if !r.c.self {
			k, v = in[1], in[2]
		}
		cot := in[len(in)-1]
		b := r.build(ctx, q, k, v)
		if tweak != nil {
			tweak(b)
		}
		out, w := b.DoneWithWeights()
		if r.c.average {
			w = ReduceMean(w, 1) // [B, Lq, Lk']
		}
		res := []*Node{out, w}
		if grads {
			loss := ReduceAllSum(Mul(out, cot))
			inputs := in[:len(in)-1]
			res = append(res, Gradient(loss, inputs...)...)
			var vg []*Node
			names, vg = train.VariableGradients(ctx, loss)
			res = append(res, vg...)
		}
		return res
	})
	if err != nil {
		t.Fatalf("NewExec: %v", err)
	}
	defer exec.Finalize()
	outs, err := exec.Exec(r.inputs()...)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	res := mhaResult{out: outs[0], weights: outs[1]}
	if grads {
		nIn := len(r.inputs()) - 1
		res.inputGrads = outs[2 : 2+nIn]
		res.varGrads = map[string]*tensors.Tensor{}
		for i, name := range names {
			key := strings.TrimPrefix(name, "/"+mhalib.DefaultScope+"/")
			key = strings.ReplaceAll(key, "/", ".")
			res.varGrads[key] = outs[2+nIn+i]
		}
	}
	return res
}

func TestMultiHeadAttentionMatchesReference(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range mhaCases() {
			t.Run(c.name, func(t *testing.T) {
				r := prepare(t, c)
				res := r.execute(t, backend, false, nil)
				tol := tolFor(r.c.dtype)
				assertClose(t, "output", res.out, r.want, tol)
				assertClose(t, "weights", res.weights, r.wantW, tol)
				if err := inspect.CheckRowsSumToOne(res.weights, 10*tol); err != nil {
					t.Errorf("weights: %v", err)
				}
			})
		}
	})
}

// numGrads returns the reference gradients of Σ MHA(...) ⊙ cot by central differences, keyed
// as the graph's results: "input0".. for the inputs, state_dict names for the weights.
func (r *mhaRun) numGrads() map[string]*mhatest.Tensor {
	p := r.p
	loss := func() float64 {
		out, _, err := mhatest.MHA(p, r.query, r.key, r.value, r.opts)
		if err != nil {
			panic(err)
		}
		return mhatest.Loss(out, r.cot)
	}
	const eps = 1e-6
	g := func(x *mhatest.Tensor) *mhatest.Tensor { return mhatest.NumGrad(loss, x, eps) }
	res := map[string]*mhatest.Tensor{"input0": g(r.query)}
	if !r.c.self {
		res["input1"], res["input2"] = g(r.key), g(r.value)
	}
	E := p.E
	if r.c.separate {
		res["q_proj_weight"], res["k_proj_weight"], res["v_proj_weight"] = g(p.Wq), g(p.Wk), g(p.Wv)
	} else {
		w := mhatest.New(3*E, E)
		copy(w.Data, g(p.Wq).Data)
		copy(w.Data[E*E:], g(p.Wk).Data)
		copy(w.Data[2*E*E:], g(p.Wv).Data)
		res["in_proj_weight"] = w
	}
	if p.Bq != nil {
		b := mhatest.New(3 * E)
		copy(b.Data, g(p.Bq).Data)
		copy(b.Data[E:], g(p.Bk).Data)
		copy(b.Data[2*E:], g(p.Bv).Data)
		res["in_proj_bias"] = b
		res["out_proj.bias"] = g(p.Bo)
	}
	res["out_proj.weight"] = g(p.Wo)
	if p.BiasK != nil {
		res["bias_k"] = g(p.BiasK).Reshape(1, 1, E)
		res["bias_v"] = g(p.BiasV).Reshape(1, 1, E)
	}
	return res
}

func TestMultiHeadAttentionGradients(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range mhaCases() {
			if c.dtype == dtypes.Float32 {
				continue // finite differences need float64
			}
			t.Run(c.name, func(t *testing.T) {
				r := prepare(t, c)
				res := r.execute(t, backend, true, nil)
				want := r.numGrads()
				for i, got := range res.inputGrads {
					name := "input" + string(rune('0'+i))
					assertClose(t, "d loss/d "+name, got, want[name], 1e-7)
					delete(want, name)
				}
				for name, got := range res.varGrads {
					w, ok := want[name]
					if !ok {
						t.Errorf("gradient for unexpected variable %q", name)
						continue
					}
					assertClose(t, "d loss/d "+name, got, w, 1e-7)
					delete(want, name)
				}
				for name := range want {
					t.Errorf("no gradient computed for %s", name)
				}
				if err := inspect.CheckGradients(res.varGrads); err != nil {
					t.Error(err)
				}
			})
		}
	})
}
