package mhalib_test

import (
	"math"
	"math/rand/v2"
	"strings"
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

// flashCase is one configuration of FlashAttention compared with the float64 reference and
// with mhalib's plain ScaledDotProductAttention on the same backend.
type flashCase struct {
	name                 string
	B, h, Lq, Lk, dk, dv int
	blockQ, blockK       int
	causal               mhalib.Causal
	attn, keyPad         func(c *flashCase, rng *rand.Rand) mhatest.Mask
	fill, scale          float64
	dtype                dtypes.DType
	grads                bool // also compare gradients with plain attention and finite differences
}

func (c *flashCase) defaults() {
	for _, d := range []*int{&c.B, &c.h} {
		if *d == 0 {
			*d = 2
		}
	}
	if c.Lq == 0 {
		c.Lq = 7
	}
	if c.Lk == 0 {
		c.Lk = c.Lq
	}
	if c.dk == 0 {
		c.dk = 4
	}
	if c.dv == 0 {
		c.dv = 3
	}
	if c.blockQ == 0 {
		c.blockQ = 3
	}
	if c.blockK == 0 {
		c.blockK = 2
	}
	if c.dtype == dtypes.InvalidDType {
		c.dtype = dtypes.Float64
	}
}

func flashBool(kind mhatest.MaskKind, shape func(c *flashCase) []int) func(c *flashCase, rng *rand.Rand) mhatest.Mask {
	return func(c *flashCase, rng *rand.Rand) mhatest.Mask { return randBoolMask(rng, kind, 0.3, shape(c)...) }
}

func flashAdditive(shape func(c *flashCase) []int) func(c *flashCase, rng *rand.Rand) mhatest.Mask {
	return func(c *flashCase, rng *rand.Rand) mhatest.Mask { return randAdditiveMask(rng, 0.2, shape(c)...) }
}

// flashPad pads the last b+1 keys of batch element b, and every key of batch element 1 when
// all is set (its queries see nothing).
func flashPad(all bool) func(c *flashCase, rng *rand.Rand) mhatest.Mask {
	return func(c *flashCase, rng *rand.Rand) mhatest.Mask {
		data := make([]bool, c.B*c.Lk)
		for b := range c.B {
			for j := range c.Lk {
				data[b*c.Lk+j] = j >= c.Lk-1-b || (all && b == 1)
			}
		}
		return mhatest.NewBoolMask(mhatest.BlockedWhereTrue, data, c.B, c.Lk)
	}
}

var (
	flash2D   = func(c *flashCase) []int { return []int{c.Lq, c.Lk} }
	flash3D   = func(c *flashCase) []int { return []int{c.B * c.h, c.Lq, c.Lk} }
	flash4D   = func(c *flashCase) []int { return []int{c.B, c.h, c.Lq, c.Lk} }
	flash4D1  = func(c *flashCase) []int { return []int{c.B, 1, c.Lq, c.Lk} }
	flashPadB = func(c *flashCase) []int { return []int{c.B, c.Lk} }
)

func flashCases() []flashCase {
	blocked, attend := mhatest.BlockedWhereTrue, mhatest.AttendWhereTrue
	return []flashCase{
		{name: "plain", grads: true},
		{name: "one-block", blockQ: 16, blockK: 16},
		{name: "blockK=1", blockK: 1},
		{name: "Lq!=Lk", Lq: 5, Lk: 9, grads: true},
		{name: "causal/top-left", causal: mhalib.CausalTopLeft, grads: true},
		{name: "causal/top-left/bq!=bk", Lq: 11, causal: mhalib.CausalTopLeft, blockQ: 4, blockK: 3},
		{name: "causal/top-left/Lq<Lk", Lq: 4, Lk: 9, causal: mhalib.CausalTopLeft},
		{name: "causal/top-left/Lq>Lk", Lq: 9, Lk: 4, causal: mhalib.CausalTopLeft},
		{name: "causal/bottom-right/decode", Lq: 3, Lk: 10, causal: mhalib.CausalBottomRight, grads: true},
		{name: "causal/bottom-right/Lq>Lk", Lq: 10, Lk: 4, causal: mhalib.CausalBottomRight, grads: true},
		{name: "causal/bottom-right/one-query", Lq: 1, Lk: 8, causal: mhalib.CausalBottomRight},
		{name: "attn2D/blocked", attn: flashBool(blocked, flash2D), grads: true},
		{name: "attn3D/attend", attn: flashBool(attend, flash3D)},
		{name: "attn4D/blocked", attn: flashBool(blocked, flash4D)},
		{name: "attn4D/B1/additive", attn: flashAdditive(flash4D1), grads: true},
		{name: "keypad/blocked", keyPad: flashPad(false)},
		{name: "keypad/additive", keyPad: flashAdditive(flashPadB)},
		{name: "keypad/fully-masked-rows", keyPad: flashPad(true), grads: true},
		{name: "keypad/fully-masked-rows/fill-1e9", keyPad: flashPad(true), fill: mhalib.FillMinus1e9},
		{name: "all-masks+causal", Lq: 9, attn: flashAdditive(flash2D), keyPad: flashPad(false),
			causal: mhalib.CausalTopLeft, grads: true},
		{name: "scale=0.3", scale: 0.3, causal: mhalib.CausalTopLeft},
		{name: "float32/causal", Lq: 13, dk: 8, dv: 8, causal: mhalib.CausalTopLeft, blockQ: 4, blockK: 4, dtype: dtypes.Float32},
		{name: "float32/keypad", Lq: 13, keyPad: flashPad(false), dtype: dtypes.Float32},
	}
}

// flashRun is a prepared case: inputs, masks and the float64 reference results.
type flashRun struct {
	c             flashCase
	q, k, v, cot  *mhatest.Tensor
	spec          mhatest.MaskSpec
	want, wantLSE *mhatest.Tensor
}

func prepareFlash(t *testing.T, c flashCase) *flashRun {
	t.Helper()
	c.defaults()
	rng := rand.New(rand.NewPCG(seedOf("flash/"+c.name), 3))
	r := &flashRun{c: c}
	r.q = mhatest.Rand(rng, -1, 1, c.B, c.h, c.Lq, c.dk)
	r.k = mhatest.Rand(rng, -1, 1, c.B, c.h, c.Lk, c.dk)
	r.v = mhatest.Rand(rng, -1, 1, c.B, c.h, c.Lk, c.dv)
	r.cot = mhatest.Rand(rng, -1, 1, c.B, c.h, c.Lq, c.dv)
	r.spec = mhatest.MaskSpec{Causal: causalRef(c.causal), Fill: c.fill}
	if c.attn != nil {
		r.spec.AttnMask = c.attn(&r.c, rng)
	}
	if c.keyPad != nil {
		r.spec.KeyPaddingMask = c.keyPad(&r.c, rng)
	}
	r.want, r.wantLSE = r.reference(t, r.q, r.k, r.v)
	return r
}

// reference computes the output with mhatest.SDPAMaskedFill and the log-sum-exp of each row of
// masked logits with float64 loops.
func (r *flashRun) reference(t *testing.T, q, k, v *mhatest.Tensor) (out, lse *mhatest.Tensor) {
	c := r.c
	additive, blocked, err := r.spec.Parts(c.B, c.h, c.Lq, c.Lk)
	if err != nil {
		t.Fatalf("reference masks: %v", err)
	}
	scale := c.scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(c.dk))
	}
	out, _ = mhatest.SDPAMaskedFill(q, k, v, additive, blocked, r.spec.FillValue(), scale)
	lse = mhatest.New(c.B, c.h, c.Lq)
	for b := range c.B {
		for n := range c.h {
			for i := range c.Lq {
				m, s := math.Inf(-1), 0.0
				logits := make([]float64, c.Lk)
				for j := range c.Lk {
					dot := 0.0
					for d := range c.dk {
						dot += q.At(b, n, i, d) * k.At(b, n, j, d)
					}
					logits[j] = scale * dot
					if additive != nil {
						logits[j] += additive.At(b, n, i, j)
					}
					if blocked != nil && blocked.At(b, n, i, j) != 0 {
						logits[j] = r.spec.FillValue()
					}
					m = math.Max(m, logits[j])
				}
				if math.IsInf(m, -1) {
					lse.Set(m, b, n, i)
					continue
				}
				for _, x := range logits {
					s += math.Exp(x - m)
				}
				lse.Set(m+math.Log(s), b, n, i)
			}
		}
	}
	return out, lse
}

// configure applies the case's masks and options to either builder (both have the same setters).
type attnOptions[T any] interface {
	AttnMask(mhalib.Mask) T
	KeyPaddingMask(mhalib.Mask) T
	Causal(mhalib.Causal) T
	Fill(float64) T
	Scale(float64) T
}

func configureFlash[T attnOptions[T]](r *flashRun, g *Graph, b T) {
	c := r.c
	if !r.spec.AttnMask.IsZero() {
		b.AttnMask(maskConst(g, r.spec.AttnMask, c.dtype))
	}
	if !r.spec.KeyPaddingMask.IsZero() {
		b.KeyPaddingMask(maskConst(g, r.spec.KeyPaddingMask, c.dtype))
	}
	b.Causal(c.causal)
	if c.fill != 0 {
		b.Fill(c.fill)
	}
	if c.scale != 0 {
		b.Scale(c.scale)
	}
}

// flashResult is what one execution returned.
type flashResult struct {
	out, lse, plain      *tensors.Tensor
	flashGrads, sdpaGrad []*tensors.Tensor // d Σ out ⊙ cot / d (q, k, v)
}

func (r *flashRun) execute(t *testing.T, backend backends.Backend, grads bool) flashResult {
	t.Helper()
	c := r.c
	exec, err := NewExec(backend, func(in []*Node) []*Node {
		q, k, v, cot := in[0], in[1], in[2], in[3]
		g := q.Graph()
		fb := mhalib.FlashAttention(q, k, v).BlockSizes(c.blockQ, c.blockK)
		configureFlash(r, g, fb)
		out, lse := fb.DoneWithLSE()
		sb := mhalib.ScaledDotProductAttention(q, k, v)
		configureFlash(r, g, sb)
		plain, _ := sb.DoneWithWeights()
		res := []*Node{out, lse, plain}
		if grads {
			res = append(res, Gradient(ReduceAllSum(Mul(out, cot)), q, k, v)...)
			res = append(res, Gradient(ReduceAllSum(Mul(plain, cot)), q, k, v)...)
		}
		return res
	})
	if err != nil {
		t.Fatalf("NewExec: %v", err)
	}
	defer exec.Finalize()
	outs, err := exec.Exec(toTensor(r.q, c.dtype), toTensor(r.k, c.dtype), toTensor(r.v, c.dtype), toTensor(r.cot, c.dtype))
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	res := flashResult{out: outs[0], lse: outs[1], plain: outs[2]}
	if grads {
		res.flashGrads, res.sdpaGrad = outs[3:6], outs[6:9]
	}
	return res
}

// assertLSE compares log-sum-exps with a tolerance relative to their size (a row blocked with
// −1e9 has lse ≈ −1e9); −inf must match −inf.
func assertLSE(t *testing.T, got, want *mhatest.Tensor, tol float64) {
	t.Helper()
	if !mhatest.SameShape(got.Shape, want.Shape) {
		t.Fatalf("lse shape %v, want %v", got.Shape, want.Shape)
	}
	for i, w := range want.Data {
		g := got.Data[i]
		if math.IsInf(w, -1) || math.IsInf(g, -1) {
			if g != w {
				t.Fatalf("lse[%d] = %g, want %g", i, g, w)
			}
			continue
		}
		if !(math.Abs(g-w) <= tol*math.Max(1, math.Abs(w))) {
			t.Fatalf("lse[%d] = %.17g, want %.17g (tol %g)", i, g, w, tol)
		}
	}
}

func TestFlashAttentionMatchesReference(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range flashCases() {
			t.Run(c.name, func(t *testing.T) {
				r := prepareFlash(t, c)
				res := r.execute(t, backend, false)
				tol := tolFor(r.c.dtype)
				assertClose(t, "flash output vs reference", res.out, r.want, tol)
				assertClose(t, "plain SDPA output vs reference", res.plain, r.want, tol)
				assertClose(t, "flash vs plain SDPA", res.out, fromTensor(t, res.plain), tol)
				assertLSE(t, fromTensor(t, res.lse), r.wantLSE, tol)
			})
		}
	})
}

func TestFlashAttentionGradients(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range flashCases() {
			if !c.grads {
				continue
			}
			t.Run(c.name, func(t *testing.T) {
				r := prepareFlash(t, c)
				res := r.execute(t, backend, true)
				names := []string{"q", "k", "v"}
				inputs := []*mhatest.Tensor{r.q, r.k, r.v}
				for i, x := range inputs {
					loss := func() float64 {
						out, _ := r.reference(t, r.q, r.k, r.v)
						return mhatest.Loss(out, r.cot)
					}
					want := mhatest.NumGrad(loss, x, 1e-6)
					assertClose(t, "flash d loss/d "+names[i]+" vs finite differences", res.flashGrads[i], want, 1e-7)
					assertClose(t, "flash vs plain d loss/d "+names[i], res.flashGrads[i], fromTensor(t, res.sdpaGrad[i]), 1e-12)
				}
			})
		}
	})
}

func TestFlashAttentionCausalPerturbFuture(t *testing.T) {
	// Behaviour, not numbers: changing future keys and values must not move past outputs.
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, h, L, d = 1, 2, 10, 4
		rng := rand.New(rand.NewPCG(1, 2))
		q := mhatest.Rand(rng, -1, 1, B, h, L, d)
		k := mhatest.Rand(rng, -1, 1, B, h, L, d)
		v := mhatest.Rand(rng, -1, 1, B, h, L, d)
		k2, v2 := k.Clone(), v.Clone()
		const cut = 6 // keys/values at positions ≥ cut change
		for n := range h {
			for j := cut; j < L; j++ {
				for x := range d {
					k2.Set(k2.At(0, n, j, x)+5, 0, n, j, x)
					v2.Set(-v2.At(0, n, j, x), 0, n, j, x)
				}
			}
		}
		run := func(k, v *mhatest.Tensor) *mhatest.Tensor {
			out, err := ExecOnce(backend, func(q, k, v *Node) *Node {
				return mhalib.FlashAttention(q, k, v).Causal(mhalib.CausalTopLeft).BlockSizes(4, 3).Done()
			}, toTensor(q, dtypes.Float64), toTensor(k, dtypes.Float64), toTensor(v, dtypes.Float64))
			if err != nil {
				t.Fatal(err)
			}
			return fromTensor(t, out)
		}
		a, b := run(k, v), run(k2, v2)
		for i := range L {
			diff := 0.0
			for n := range h {
				for x := range d {
					diff = math.Max(diff, math.Abs(a.At(0, n, i, x)-b.At(0, n, i, x)))
				}
			}
			if i < cut && diff != 0 {
				t.Errorf("row %d (before the change at %d) moved by %g", i, cut, diff)
			}
			if i >= cut && diff == 0 {
				t.Errorf("row %d (after the change at %d) did not move: the test cannot see anything", i, cut)
			}
		}
	})
}

func TestFlashAttentionErrors(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		q := tensors.FromShape(shapes.Make(dtypes.Float32, 1, 2, 4, 8))
		k := tensors.FromShape(shapes.Make(dtypes.Float32, 1, 2, 5, 8))
		v := tensors.FromShape(shapes.Make(dtypes.Float32, 1, 2, 6, 8))
		for _, tc := range []struct {
			name    string
			k, v    *tensors.Tensor
			blockQ  int
			wantMsg string
		}{
			{"block size 0", k, tensors.FromShape(shapes.Make(dtypes.Float32, 1, 2, 5, 8)), 0, "mhalib: BlockSizes: blockQ=0"},
			{"v length", k, v, 4, "mhalib: v: shape"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := ExecOnce(backend, func(q, k, v *Node) *Node {
					return mhalib.FlashAttention(q, k, v).BlockSizes(tc.blockQ, 4).Done()
				}, q, tc.k, tc.v)
				if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantMsg)
				}
			})
		}
	})
}

// scoreElements sums the sizes of the q·kᵀ tiles of a flash graph: the DotGeneral nodes whose
// output's last axis has blockK entries (the value dimension differs from blockK).
func scoreElements(t *testing.T, backend backends.Backend, L, blockQ, blockK int, causal mhalib.Causal) int {
	t.Helper()
	const B, h, dk, dv = 1, 2, 3, 5
	g := NewGraph(backend, "flash-tiles")
	defer g.Finalize()
	q := Parameter(g, "q", shapes.Make(dtypes.Float32, B, h, L, dk))
	k := Parameter(g, "k", shapes.Make(dtypes.Float32, B, h, L, dk))
	v := Parameter(g, "v", shapes.Make(dtypes.Float32, B, h, L, dv))
	_ = mhalib.FlashAttention(q, k, v).BlockSizes(blockQ, blockK).Causal(causal).Done()
	total := 0
	for _, n := range g.Nodes() {
		// Score tiles: every DotGeneral but the products with v ([…, dv], or [dv+1] with the
		// column of ones). On the pure-Go backend the tiles are whole query blocks against all
		// the keys they see (flashrows.go), which at these sizes covers the same pairs.
		if n.Type() == NodeTypeDotGeneral && n.Shape().Rank() == 4 && n.Shape().Dim(-1) != dv && n.Shape().Dim(-1) != dv+1 {
			total += n.Shape().Size() / (B * h)
		}
	}
	return total
}

func TestFlashAttentionSkipsTilesAboveTheDiagonal(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, tc := range []struct {
			L, blockQ, blockK int
			causal            mhalib.Causal
			want              int // computed (row, key) pairs per head
		}{
			{16, 4, 4, mhalib.NoCausal, 16 * 16},
			// Key block j (keys 4j…4j+3) is computed for rows 4j…15 only: (16+12+8+4)·4.
			{16, 4, 4, mhalib.CausalTopLeft, (16 + 12 + 8 + 4) * 4},
			// Query blocks of 8 rows: key blocks 0, 1 for all 16 rows, 2, 3 for rows 8…15.
			{16, 8, 4, mhalib.CausalTopLeft, (16 + 16 + 8 + 8) * 4},
		} {
			got := scoreElements(t, backend, tc.L, tc.blockQ, tc.blockK, tc.causal)
			if got != tc.want {
				t.Errorf("L=%d blocks %d×%d %s: %d score elements per head, want %d", tc.L, tc.blockQ, tc.blockK, tc.causal, got, tc.want)
			}
		}
	})
}

// TestMultiHeadAttentionFlashFormulation runs MultiHeadAttention's cases (masks, causal,
// add_bias_kv, add_zero_attn, kdim/vdim, …) with Formulation(Flash) against the reference.
func TestMultiHeadAttentionFlashFormulation(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		ran := 0
		for _, c := range mhaCases() {
			if c.sizes != nil || c.strategy != nil || c.formulation != mhalib.HeadParallel {
				continue // Flash needs equal heads and is a formulation itself
			}
			t.Run(c.name, func(t *testing.T) {
				r := prepare(t, c)
				ctx := newCtx(t, r.p, !r.c.separate, r.c.dtype)
				exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, in []*Node) *Node {
					q, k, v := in[0], in[0], in[0]
					if !r.c.self {
						k, v = in[1], in[2]
					}
					return r.build(ctx, q, k, v).Formulation(mhalib.Flash).Done()
				})
				if err != nil {
					t.Fatal(err)
				}
				defer exec.Finalize()
				inputs := r.inputs()
				out, err := exec.Exec(inputs[:len(inputs)-1]...)
				if err != nil {
					t.Fatal(err)
				}
				assertClose(t, "Flash formulation vs reference", out[0], r.want, tolFor(r.c.dtype))
			})
			ran++
		}
		if ran < 20 {
			t.Fatalf("only %d cases ran", ran)
		}
	})
}

func TestMultiHeadAttentionFlashErrors(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		x := tensors.FromShape(shapes.Make(dtypes.Float32, 1, 3, 10))
		for _, tc := range []struct {
			name  string
			heads int
			fn    func(b *mhalib.MHABuilder) *Node
			want  string
		}{
			{"weights", 2, func(b *mhalib.MHABuilder) *Node { o, _ := b.DoneWithWeights(); return o },
				"mhalib: Formulation: Flash never forms the attention weights"},
			{"uneven", 3, func(b *mhalib.MHABuilder) *Node { return b.HeadSizes(4, 4, 2).Done() },
				"mhalib: Formulation: Flash needs heads of equal size, got HeadSizes [4 4 2]"},
			{"dropout", 2, func(b *mhalib.MHABuilder) *Node { return b.Dropout(context.New(), 0.1).Done() },
				"mhalib: Formulation: Flash does not support attention dropout (rate 0.1)"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := context.ExecOnce(backend, context.New(), func(ctx *context.Context, x *Node) *Node {
					return tc.fn(mhalib.MultiHeadAttention(ctx, x, x, x, tc.heads).Formulation(mhalib.Flash))
				}, x)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
			})
		}
	})
}
