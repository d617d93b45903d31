package mhalib_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// modernCase is one configuration of the options of current LLMs, run through
// ScaledDotProductAttention and FlashAttention and compared with mhatest.Attention.
type modernCase struct {
	name                       string
	B, Hq, Hkv, Lq, Lk, dk, dv int
	causal                     mhalib.Causal
	window                     *mhalib.Window
	alibi, sinks               bool
	softCap, scale             float64
	blockQ, blockK             int // flash block sizes (small: many tiles, skipping exercised)
	additive                   bool
}

func modernCases() []modernCase {
	w := func(l, r int, a mhalib.Alignment) *mhalib.Window { return &mhalib.Window{Left: l, Right: r, Align: a} }
	return []modernCase{
		{name: "gqa", Hq: 4, Hkv: 2},
		{name: "mqa/causal", Hq: 3, Hkv: 1, causal: mhalib.CausalTopLeft},
		{name: "gqa/bottom-right/Lq<Lk", Hq: 4, Hkv: 2, Lq: 3, Lk: 7, causal: mhalib.CausalBottomRight},
		{name: "window/top-left", Lq: 9, Lk: 9, window: w(2, 1, mhalib.AlignTopLeft)},
		{name: "window/causal/left-only", Lq: 9, Lk: 9, window: w(3, -1, mhalib.AlignTopLeft), causal: mhalib.CausalTopLeft},
		{name: "window/bottom-right/Lq<Lk", Lq: 4, Lk: 11, window: w(2, 0, mhalib.AlignBottomRight)},
		{name: "window/bottom-right/Lq>Lk", Lq: 8, Lk: 5, window: w(1, 1, mhalib.AlignBottomRight)},
		{name: "window/right-only", Lq: 7, Lk: 7, window: w(-1, 1, mhalib.AlignTopLeft)},
		{name: "window/empty-rows", Lq: 6, Lk: 6, window: w(0, 0, mhalib.AlignTopLeft), causal: mhalib.CausalBottomRight, additive: true},
		{name: "alibi", Hq: 3, Hkv: 3, alibi: true, causal: mhalib.CausalTopLeft},
		{name: "alibi/6heads/gqa", Hq: 6, Hkv: 2, alibi: true, Lq: 4, Lk: 6},
		{name: "softcap", softCap: 0.8, scale: 2},
		{name: "softcap/gqa/causal", Hq: 4, Hkv: 1, softCap: 3, causal: mhalib.CausalTopLeft},
		{name: "sinks", sinks: true},
		{name: "sinks/gqa/window", Hq: 4, Hkv: 2, sinks: true, Lq: 8, Lk: 8, window: w(2, 0, mhalib.AlignTopLeft)},
		{name: "everything", Hq: 4, Hkv: 2, Lq: 6, Lk: 10, alibi: true, softCap: 2, sinks: true, additive: true,
			window: w(3, 1, mhalib.AlignBottomRight), causal: mhalib.CausalBottomRight},
	}
}

func (c *modernCase) defaults() {
	for _, d := range []struct {
		p *int
		v int
	}{{&c.B, 2}, {&c.Hq, 2}, {&c.Lq, 5}, {&c.Lk, 5}, {&c.dk, 3}, {&c.blockQ, 2}, {&c.blockK, 3}} {
		if *d.p == 0 {
			*d.p = d.v
		}
	}
	if c.Hkv == 0 {
		c.Hkv = c.Hq
	}
	if c.dv == 0 {
		c.dv = c.dk + 1
	}
}

// spec is the reference's view of the case.
func (c *modernCase) spec(bias *mhatest.Tensor, sinks []float64) mhatest.AttentionSpec {
	s := mhatest.AttentionSpec{Scale: c.scale, SoftCap: c.softCap, Bias: bias, Causal: causalRef(c.causal), Sinks: sinks}
	if c.window != nil {
		s.Window = &mhatest.Window{Left: c.window.Left, Right: c.window.Right, BottomRight: c.window.Align == mhalib.AlignBottomRight}
	}
	if c.alibi {
		s.ALiBi = mhatest.ALiBiSlopes(c.Hq)
	}
	return s
}

// TestModernOptions runs every case through both builders: output vs the float64 reference,
// gradients of q, k, v (and sinks) vs finite differences of the reference, on both backends.
func TestModernOptions(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range modernCases() {
			t.Run(c.name, func(t *testing.T) {
				c.defaults()
				rng := rand.New(rand.NewPCG(seedOf(c.name), 13))
				q := mhatest.Rand(rng, -1, 1, c.B, c.Hq, c.Lq, c.dk)
				k := mhatest.Rand(rng, -1, 1, c.B, c.Hkv, c.Lk, c.dk)
				v := mhatest.Rand(rng, -1, 1, c.B, c.Hkv, c.Lk, c.dv)
				cot := mhatest.Rand(rng, -1, 1, c.B, c.Hq, c.Lq, c.dv)
				sinks := mhatest.Rand(rng, -1, 1, c.Hq)
				var bias *mhatest.Tensor
				if c.additive { // a float mask that blocks row 1 entirely
					bias = mhatest.Rand(rng, -1, 1, c.B, c.Hq, c.Lq, c.Lk)
					for b := 0; b < c.B; b++ {
						for h := 0; h < c.Hq; h++ {
							for j := 0; j < c.Lk; j++ {
								bias.Set(math.Inf(-1), b, h, 1, j)
							}
						}
					}
				}
				var sinkVals []float64
				if c.sinks {
					sinkVals = sinks.Data
				}
				ref := func() *mhatest.Tensor {
					sv := sinkVals
					if c.sinks {
						sv = sinks.Data
					}
					out, _ := mhatest.Attention(q, k, v, c.spec(bias, sv))
					return out
				}
				want := ref()
				dt := dtypes.Float64
				if backend.Name() != "go" {
					// XLA compiles every unrolled flash step of the gradient graph: larger tiles keep
					// the compile time in check (the small ones run on the pure-Go backend).
					c.blockQ, c.blockK = 4, 5
				}
				for _, flash := range []bool{false, true} {
					exec := MustNewExec(backend, func(in []*Node) []*Node {
						qn, kn, vn, cn, sn := in[0], in[1], in[2], in[3], in[4]
						var out *Node
						if flash {
							b := mhalib.FlashAttention(qn, kn, vn).BlockSizes(c.blockQ, c.blockK).EnableGQA(c.Hkv != c.Hq)
							applyModern(b, &c, additiveConst(qn.Graph(), bias), sn)
							out = b.Done()
						} else {
							b := mhalib.ScaledDotProductAttention(qn, kn, vn).EnableGQA(c.Hkv != c.Hq)
							applyModern(b, &c, additiveConst(qn.Graph(), bias), sn)
							out, _ = b.DoneWithWeights()
						}
						loss := ReduceAllSum(Mul(out, cn))
						return append([]*Node{out}, Gradient(loss, qn, kn, vn, sn)...)
					})
					res, err := exec.Exec(toTensor(q, dt), toTensor(k, dt), toTensor(v, dt), toTensor(cot, dt), toTensor(sinks, dt))
					if err != nil {
						t.Fatal(err)
					}
					what := map[bool]string{false: "sdpa", true: "flash"}[flash]
					assertClose(t, what+" output", res[0], want, 1e-12)
					loss := func() float64 { return mhatest.Loss(ref(), cot) }
					for i, x := range []*mhatest.Tensor{q, k, v, sinks} {
						assertClose(t, what+" gradient "+[]string{"q", "k", "v", "sinks"}[i], res[1+i], mhatest.NumGrad(loss, x, 1e-6), 1e-8)
					}
				}
			})
		}
	})
}

// sharedOptions are the options of every attention builder (AttentionOptions) these tests set.
type sharedOptions[B any] interface {
	Window(left, right int, a mhalib.Alignment) B
	ALiBi([]float64) B
	SoftCap(float64) B
	Sinks(*Node) B
	Causal(mhalib.Causal) B
	Scale(float64) B
	AttnMask(mhalib.Mask) B
}

// modernBuilder is what SDPABuilder and FlashBuilder have in common for these tests.
type modernBuilder[B any] interface {
	sharedOptions[B]
	EnableGQA(bool) B
}

// additiveConst is bias [B, Hq, Lq, Lk] as an additive mask, or no mask for nil.
func additiveConst(g *Graph, bias *mhatest.Tensor) mhalib.Mask {
	if bias == nil {
		return mhalib.Mask{}
	}
	return mhalib.MaskAdditive(Const(g, toTensor(bias, dtypes.Float64)))
}

// applyModern sets the options of case c on any attention builder (c.Hq heads; mask may be
// the zero Mask).
func applyModern[B any](b sharedOptions[B], c *modernCase, mask mhalib.Mask, sinks *Node) {
	b.Causal(c.causal)
	if c.window != nil {
		b.Window(c.window.Left, c.window.Right, c.window.Align)
	}
	if c.alibi {
		b.ALiBi(mhalib.ALiBiSlopes(c.Hq))
	}
	if c.softCap != 0 {
		b.SoftCap(c.softCap)
	}
	if c.sinks {
		b.Sinks(sinks)
	}
	if c.scale != 0 {
		b.Scale(c.scale)
	}
	if !mask.IsZero() {
		b.AttnMask(mask)
	}
}

// Bad options and shapes give one ArgumentError naming the argument, from both builders.
func TestModernOptionErrors(t *testing.T) {
	b := goBackend()
	f64 := dtypes.Float64
	for _, c := range []struct {
		name       string
		qh, kh, vh int
		opt        func(o modernBuilder[*mhalib.SDPABuilder], g *Graph)
		optF       func(o modernBuilder[*mhalib.FlashBuilder], g *Graph)
		arg, want  string
	}{
		{name: "gqa not enabled", qh: 4, kh: 2, vh: 2, arg: "k", want: "EnableGQA"},
		{name: "heads not a multiple", qh: 4, kh: 3, vh: 3, arg: "k", want: "do not divide",
			opt:  func(o modernBuilder[*mhalib.SDPABuilder], g *Graph) { o.EnableGQA(true) },
			optF: func(o modernBuilder[*mhalib.FlashBuilder], g *Graph) { o.EnableGQA(true) }},
		{name: "v heads differ from k", qh: 4, kh: 2, vh: 1, arg: "v", want: "does not match",
			opt:  func(o modernBuilder[*mhalib.SDPABuilder], g *Graph) { o.EnableGQA(true) },
			optF: func(o modernBuilder[*mhalib.FlashBuilder], g *Graph) { o.EnableGQA(true) }},
		{name: "alibi slopes", qh: 2, kh: 2, vh: 2, arg: "ALiBi", want: "3 slopes for 2 query heads",
			opt:  func(o modernBuilder[*mhalib.SDPABuilder], g *Graph) { o.ALiBi([]float64{1, 2, 3}) },
			optF: func(o modernBuilder[*mhalib.FlashBuilder], g *Graph) { o.ALiBi([]float64{1, 2, 3}) }},
		{name: "softcap negative", qh: 2, kh: 2, vh: 2, arg: "SoftCap", want: "positive",
			opt:  func(o modernBuilder[*mhalib.SDPABuilder], g *Graph) { o.SoftCap(-1) },
			optF: func(o modernBuilder[*mhalib.FlashBuilder], g *Graph) { o.SoftCap(-1) }},
		{name: "sinks shape", qh: 2, kh: 2, vh: 2, arg: "Sinks", want: "want [2]",
			opt:  func(o modernBuilder[*mhalib.SDPABuilder], g *Graph) { o.Sinks(Const(g, []float64{1, 2, 3})) },
			optF: func(o modernBuilder[*mhalib.FlashBuilder], g *Graph) { o.Sinks(Const(g, []float64{1, 2, 3})) }},
		{name: "window alignment", qh: 2, kh: 2, vh: 2, arg: "Window", want: "alignment",
			opt:  func(o modernBuilder[*mhalib.SDPABuilder], g *Graph) { o.Window(1, 1, mhalib.Alignment(7)) },
			optF: func(o modernBuilder[*mhalib.FlashBuilder], g *Graph) { o.Window(1, 1, mhalib.Alignment(7)) }},
	} {
		for _, flash := range []bool{false, true} {
			_, err := MustNewExec(b, func(q, k, v *Node) *Node {
				if flash {
					fb := mhalib.FlashAttention(q, k, v)
					if c.optF != nil {
						c.optF(fb, q.Graph())
					}
					return fb.Done()
				}
				sb := mhalib.ScaledDotProductAttention(q, k, v)
				if c.opt != nil {
					c.opt(sb, q.Graph())
				}
				out, _ := sb.DoneWithWeights()
				return out
			}).Exec(zeros(f64, 1, c.qh, 3, 4), zeros(f64, 1, c.kh, 5, 4), zeros(f64, 1, c.vh, 5, 4))
			var ae *mhalib.ArgumentError
			if !errors.As(err, &ae) || ae.Arg != c.arg || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (flash=%v): err = %v, want an ArgumentError for %q containing %q", c.name, flash, err, c.arg, c.want)
			}
		}
	}
}

// GQA never materialises repeated keys or values: no node of the graph has k's data repeated to
// Hq heads (a [B, Hq, Lk, dk] node), for SDPA and flash.
func TestGQANoRepeatedKV(t *testing.T) {
	g := NewGraph(goBackend(), "gqa")
	q := Parameter(g, "q", shapesOf(2, 8, 5, 16)) // [B, Hq=8, Lq, dk]
	k := Parameter(g, "k", shapesOf(2, 2, 7, 16)) // [B, Hkv=2, Lk=7, dk]
	v := Parameter(g, "v", shapesOf(2, 2, 7, 16))
	out, _ := mhalib.ScaledDotProductAttention(q, k, v).EnableGQA(true).DoneWithWeights()
	fout := mhalib.FlashAttention(q, k, v).EnableGQA(true).BlockSizes(2, 3).Done()
	_, _ = out, fout
	for _, n := range g.Nodes() {
		d := n.Shape().Dimensions
		if len(d) == 4 && d[1] == 8 && d[2] == 7 && d[3] >= 16 {
			t.Fatalf("node %s has k/v repeated over the 8 query heads", n)
		}
	}
}

func shapesOf(dims ...int) shapes.Shape { return shapes.Make(dtypes.Float64, dims...) }

// FlashAttention with a window computes only the tiles that touch it: at Lq = Lk = 256 with
// 16×16 tiles, window (16, 0) plus causal, the score tiles built add up to at most
// Lq·(window + 2 blocks) scores, against Lq²/2 for causal alone.
func TestFlashWindowSkipsTiles(t *testing.T) {
	scores := func(window bool) int {
		g := NewGraph(goBackend(), "window")
		q := Parameter(g, "q", shapesOf(1, 1, 256, 4))
		b := mhalib.FlashAttention(q, q, q).BlockSizes(16, 16).Causal(mhalib.CausalTopLeft)
		if window {
			b.Window(16, 0, mhalib.AlignTopLeft)
		}
		b.Done()
		n := 0
		for _, node := range g.Nodes() {
			d := node.Shape().Dimensions
			// q·kᵀ tiles [1, 1, rows, cols]: every DotGeneral but the products with v ([…, 4], or
			// [dv+1] with flash.go's column of ones).
			if node.Type() == NodeTypeDotGeneral && len(d) == 4 && d[3] != 4 && d[3] != 4+1 {
				n += d[2] * d[3]
			}
		}
		return n
	}
	full, win := scores(false), scores(true)
	if full < 256*256/2 || win > 256*(16+2*16) {
		t.Fatalf("score elements built: causal %d (want ≥ %d), window %d (want ≤ %d)", full, 256*256/2, win, 256*(16+2*16))
	}
	t.Logf("score elements built: causal %d, causal + window 16: %d", full, win)
}
