package mhalib_test

import (
	"math"
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

// mhaOptionsCase is MultiHeadAttention with the options it shares with ScaledDotProductAttention
// and FlashAttention (AttentionOptions): window, ALiBi, soft-cap, sinks, with the masks. Of the
// modernCase, B, Hq, Lq, Lk and the options are used; additive is an attn_mask [B, h, Lq, Lk]
// that blocks query row 1 entirely.
type mhaOptionsCase struct {
	modernCase
	sizes []int // uneven heads; nil: 2 heads of 4 (E = 8)
}

func mhaOptionsCases() []mhaOptionsCase {
	w := func(l, r int, a mhalib.Alignment) *mhalib.Window { return &mhalib.Window{Left: l, Right: r, Align: a} }
	type m = modernCase
	return []mhaOptionsCase{
		{modernCase: m{name: "window/causal", Lq: 7, Lk: 7, window: w(2, 0, mhalib.AlignTopLeft), causal: mhalib.CausalTopLeft}},
		{modernCase: m{name: "window/bottom-right/Lq<Lk", Lq: 3, Lk: 8, window: w(2, 1, mhalib.AlignBottomRight)}},
		{modernCase: m{name: "alibi/causal", Lq: 5, Lk: 5, alibi: true, causal: mhalib.CausalTopLeft}},
		{modernCase: m{name: "softcap/scale", Lq: 4, Lk: 6, softCap: 0.7, scale: 2}},
		{modernCase: m{name: "sinks", Lq: 4, Lk: 5, sinks: true}},
		{modernCase: m{name: "everything", Lq: 6, Lk: 9, window: w(3, 1, mhalib.AlignBottomRight), causal: mhalib.CausalBottomRight,
			alibi: true, softCap: 2, sinks: true, additive: true}},
		{modernCase: m{name: "everything/uneven heads", Lq: 5, Lk: 7, window: w(2, -1, mhalib.AlignTopLeft),
			alibi: true, softCap: 1.5, sinks: true, additive: true}, sizes: []int{4, 3, 1}},
	}
}

// mhaOptionsRef is MultiHeadAttention with options in float64: the projections of p, each head
// through mhatest.Attention with its own ALiBi slope, sink and mask rows (scale 1/√d_n unless
// set), the heads merged, the output projection. query [B, Lq, E], kv [B, Lk, E] → [B, Lq, E].
func mhaOptionsRef(p mhatest.MHAParams, query, kv *mhatest.Tensor, spec mhatest.AttentionSpec) *mhatest.Tensor {
	q := mhatest.Linear(query, p.Wq, p.Bq) // [B, Lq, E]
	k := mhatest.Linear(kv, p.Wk, p.Bk)    // [B, Lk, E]
	v := mhatest.Linear(kv, p.Wv, p.Bv)    // [B, Lk, E]
	B, Lq, E := q.Shape[0], q.Shape[1], q.Shape[2]
	cols := func(x *mhatest.Tensor, off, d int) *mhatest.Tensor { // [B, L, E] → [B, 1, L, d]
		out := mhatest.New(x.Shape[0], 1, x.Shape[1], d)
		for b := range x.Shape[0] {
			for l := range x.Shape[1] {
				for c := range d {
					out.Set(x.At(b, l, off+c), b, 0, l, c)
				}
			}
		}
		return out
	}
	merged := mhatest.New(B, Lq, E)
	off := 0
	for n, d := range p.Heads() {
		s := spec
		if spec.ALiBi != nil {
			s.ALiBi = spec.ALiBi[n : n+1]
		}
		if spec.Sinks != nil {
			s.Sinks = spec.Sinks[n : n+1]
		}
		if spec.Bias != nil { // [B, h, Lq, Lk] → head n, [B, 1, Lq, Lk]
			Lk := spec.Bias.Shape[3]
			s.Bias = mhatest.New(B, 1, Lq, Lk)
			for b := range B {
				for i := range Lq {
					for j := range Lk {
						s.Bias.Set(spec.Bias.At(b, n, i, j), b, 0, i, j)
					}
				}
			}
		}
		out, _ := mhatest.Attention(cols(q, off, d), cols(k, off, d), cols(v, off, d), s) // [B, 1, Lq, d]
		for b := range B {
			for i := range Lq {
				for c := range d {
					merged.Set(out.At(b, 0, i, c), b, i, off+c)
				}
			}
		}
		off += d
	}
	return mhatest.Linear(merged, p.Wo, p.Bo) // [B, Lq, E]
}

// TestMHAAttentionOptions: every option MultiHeadAttention shares with ScaledDotProductAttention
// and FlashAttention, in every formulation, against the float64 reference: output, and the
// gradients of the query input and of the sinks against finite differences, on both backends.
func TestMHAAttentionOptions(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range mhaOptionsCases() {
			t.Run(c.name, func(t *testing.T) {
				const B, E = 2, 8
				h := 2
				if c.sizes != nil {
					h = len(c.sizes)
				}
				c.B, c.Hq = B, h
				rng := rand.New(rand.NewPCG(seedOf(c.name), 17))
				p := randParams(rng, E, h, E, E, c.sizes, true, false, false)
				query := mhatest.Rand(rng, -1, 1, B, c.Lq, E)
				kv := mhatest.Rand(rng, -1, 1, B, c.Lk, E)
				cot := mhatest.Rand(rng, -1, 1, B, c.Lq, E)
				sinks := mhatest.Rand(rng, -1, 1, h)
				bias := mhatest.Rand(rng, -1, 1, B, h, c.Lq, c.Lk)
				for b := range B {
					for n := range h {
						for j := range c.Lk {
							bias.Set(math.Inf(-1), b, n, 1, j) // query 1 sees no key
						}
					}
				}
				ref := func() *mhatest.Tensor {
					var b *mhatest.Tensor
					if c.additive {
						b = bias
					}
					var s []float64
					if c.sinks {
						s = sinks.Data
					}
					return mhaOptionsRef(p, query, kv, c.spec(b, s))
				}
				want := ref()
				loss := func() float64 { return mhatest.Loss(ref(), cot) }
				wantDQuery := mhatest.NumGrad(loss, query, 1e-6)
				wantDSinks := mhatest.NumGrad(loss, sinks, 1e-6)

				formulations := []mhalib.Formulation{mhalib.HeadParallel, mhalib.PerHeadLoop, mhalib.Flash}
				if c.sizes != nil {
					formulations = formulations[:2] // Flash needs heads of equal size
				}
				blockQ, blockK := 2, 3
				if backend.Name() != "go" {
					blockQ, blockK = 4, 5 // fewer unrolled steps for XLA to compile
				}
				dt := dtypes.Float64
				for _, f := range formulations {
					ctx := newCtx(t, p, true, dt)
					exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, in []*Node) []*Node {
						x, y, cn, sn, bn := in[0], in[1], in[2], in[3], in[4]
						b := mhalib.MultiHeadAttention(ctx, x, y, y, h).Formulation(f).FlashBlockSizes(blockQ, blockK)
						if c.sizes != nil {
							b.HeadSizes(c.sizes...)
						}
						mask := mhalib.Mask{}
						if c.additive {
							mask = mhalib.MaskAdditive(bn)
						}
						applyModern(b, &c.modernCase, mask, sn)
						out := b.Done() // [B, Lq, E]
						return append([]*Node{out}, Gradient(ReduceAllSum(Mul(out, cn)), x, sn)...)
					})
					if err != nil {
						t.Fatal(err)
					}
					res, err := exec.Exec(toTensor(query, dt), toTensor(kv, dt), toTensor(cot, dt), toTensor(sinks, dt), toTensor(bias, dt))
					if err != nil {
						t.Fatalf("%s: %v", f, err)
					}
					assertClose(t, f.String()+" output", res[0], want, 1e-12)
					assertClose(t, f.String()+" gradient of query", res[1], wantDQuery, 1e-8)
					assertClose(t, f.String()+" gradient of sinks", res[2], wantDSinks, 1e-8)
				}
			})
		}
	})
}

// PreLNBlock passes its attention options to its MultiHeadAttention: the block with a window,
// ALiBi and a soft-cap equals x + MHA(LN(x)) with the same options and variables.
func TestBlockAttentionOptions(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(7, 7))
		x := mhatest.Rand(rng, -1, 1, 2, 6, 8)
		ctx := context.New()
		ctx.SetRNGStateFromSeed(3)
		exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, x *Node) []*Node {
			block := mhalib.PreLNBlock(ctx, x, 2).Causal(mhalib.CausalTopLeft).Window(2, 0, mhalib.AlignTopLeft).
				ALiBi(mhalib.ALiBiSlopes(2)).SoftCap(1.5).Done() // [B, L, E]
			normed := mhalib.LayerNorm(ctx.Reuse().In("norm"), x, mhalib.LayerNormEps)
			attn := mhalib.MultiHeadAttention(ctx.Reuse(), normed, normed, normed, 2).Scope("attn").Causal(mhalib.CausalTopLeft).
				Window(2, 0, mhalib.AlignTopLeft).ALiBi(mhalib.ALiBiSlopes(2)).SoftCap(1.5).Done()
			plain := mhalib.PreLNBlock(ctx.Reuse(), x, 2).Causal(mhalib.CausalTopLeft).Done()
			return []*Node{block, Add(x, attn), plain}
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := exec.Exec(toTensor(x, dtypes.Float64))
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, "block with options", res[0], fromTensor(t, res[1]), 1e-12)
		withOptions, plain := fromTensor(t, res[0]), fromTensor(t, res[2])
		d := 0.0
		for i := range plain.Data {
			d = max(d, math.Abs(withOptions.Data[i]-plain.Data[i]))
		}
		if d < 1e-3 {
			t.Errorf("the options change the block's output by %g only: were they passed on?", d)
		}
	})
}
