package mhalib_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// bandCase is a sliding window long enough for FlashAttention's banded path on XLA
// (flashband.go: the slab of 128 rows + window keys is at most half the keys).
type bandCase struct {
	name    string
	lq, lk  int
	left    int
	right   int
	align   mhalib.Alignment
	causal  mhalib.Causal
	softCap float64
}

func bandCases() []bandCase {
	return []bandCase{
		{name: "causal/left-20", lq: 300, lk: 300, left: 20, right: 0, causal: mhalib.CausalTopLeft},
		{name: "two-sided/softcap", lq: 290, lk: 290, left: 16, right: 7, softCap: 2},
		{name: "bottom-right/Lq<Lk", lq: 200, lk: 460, left: 30, right: 0, align: mhalib.AlignBottomRight, causal: mhalib.CausalBottomRight},
		{name: "left-only/causal-wider", lq: 330, lk: 330, left: 9, right: -1, causal: mhalib.CausalTopLeft},
	}
}

// bandLSE is the log-sum-exp of every row's visible scaled (soft-capped) logits, in float64.
func bandLSE(q, k *mhatest.Tensor, spec mhatest.AttentionSpec, scale float64) *mhatest.Tensor {
	B, H, Lq, dk, Lk := q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3], k.Shape[2]
	out := mhatest.New(B, H, Lq)
	for b := range B {
		for h := range H {
			for i := range Lq {
				var s []float64
				for j := range Lk {
					if !spec.Window.Allows(i, j, Lq, Lk) || (spec.Causal == mhatest.TopLeft && j > i) ||
						(spec.Causal == mhatest.BottomRight && j > i+Lk-Lq) {
						continue
					}
					x := 0.0
					for d := range dk {
						x += q.At(b, h, i, d) * k.At(b, h, j, d)
					}
					x *= scale
					if spec.SoftCap > 0 {
						x = spec.SoftCap * math.Tanh(x/spec.SoftCap)
					}
					s = append(s, x)
				}
				m := math.Inf(-1)
				for _, x := range s {
					m = max(m, x)
				}
				sum := 0.0
				for _, x := range s {
					sum += math.Exp(x - m)
				}
				out.Set(m+math.Log(sum), b, h, i)
			}
		}
	}
	return out
}

// FlashAttention with a long sliding window — the banded product on XLA, the key-block loop on
// the pure-Go backend — gives the reference's output and log-sum-exp, and the gradients of
// plain attention (ScaledDotProductAttention, checked against finite differences elsewhere), on
// both backends, including a last chunk of rows that is only partly filled.
func TestFlashBandedWindow(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range bandCases() {
			t.Run(c.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seedOf(c.name), 29))
				const B, H, dk, dv = 1, 2, 8, 5
				q := mhatest.Rand(rng, -1, 1, B, H, c.lq, dk)
				k := mhatest.Rand(rng, -1, 1, B, H, c.lk, dk)
				v := mhatest.Rand(rng, -1, 1, B, H, c.lk, dv)
				cot := mhatest.Rand(rng, -1, 1, B, H, c.lq, dv)
				spec := mhatest.AttentionSpec{SoftCap: c.softCap, Causal: causalRef(c.causal),
					Window: &mhatest.Window{Left: c.left, Right: c.right, BottomRight: c.align == mhalib.AlignBottomRight}}
				want, _ := mhatest.Attention(q, k, v, spec)
				wantLSE := bandLSE(q, k, spec, 1/math.Sqrt(dk))
				dt := dtypes.Float64
				results := map[bool][]float64{}
				for _, flash := range []bool{true, false} {
					exec := MustNewExec(backend, func(in []*Node) []*Node {
						qn, kn, vn, cn := in[0], in[1], in[2], in[3]
						var out, lse *Node
						if flash {
							b := mhalib.FlashAttention(qn, kn, vn).Causal(c.causal).Window(c.left, c.right, c.align)
							if c.softCap > 0 {
								b.SoftCap(c.softCap)
							}
							out, lse = b.DoneWithLSE()
						} else {
							b := mhalib.ScaledDotProductAttention(qn, kn, vn).Causal(c.causal).Window(c.left, c.right, c.align)
							if c.softCap > 0 {
								b.SoftCap(c.softCap)
							}
							out = b.Done()
							lse = out // unused
						}
						loss := ReduceAllSum(Mul(out, cn))
						return append([]*Node{out, lse}, Gradient(loss, qn, kn, vn)...)
					})
					res, err := exec.Exec(toTensor(q, dt), toTensor(k, dt), toTensor(v, dt), toTensor(cot, dt))
					if err != nil {
						t.Fatal(err)
					}
					what := map[bool]string{false: "sdpa", true: "flash"}[flash]
					assertClose(t, what+" output", res[0], want, 1e-12)
					if flash {
						assertClose(t, "flash lse", res[1], wantLSE, 1e-12)
					}
					var grads []float64
					for _, g := range res[2:] {
						grads = append(grads, fromTensor(t, g).Data...)
					}
					results[flash] = grads
				}
				for i, g := range results[true] {
					if d := math.Abs(g - results[false][i]); d > 1e-11 {
						t.Fatalf("gradient element %d: flash %g, sdpa %g (|Δ| %.3g)", i, g, results[false][i], d)
					}
				}
			})
		}
	})
}

// On XLA a long window is one banded product: two rank-5 DotGenerals (scores and weighted sum)
// and no per-key-block steps; on the pure-Go backend FlashAttention keeps its key-block loop.
func TestFlashBandedWindowIsOneProduct(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		g := NewGraph(backend, "band")
		q := Parameter(g, "q", shapesOf(1, 2, 1024, 8))
		mhalib.FlashAttention(q, q, q).Causal(mhalib.CausalTopLeft).Window(64, 0, mhalib.AlignTopLeft).Done()
		dots, rank5 := 0, 0
		for _, node := range g.Nodes() {
			if node.Type() == NodeTypeDotGeneral {
				dots++
				if node.Rank() == 5 {
					rank5++
				}
			}
		}
		banded := backend.Name() == "xla"
		if banded && (dots != 2 || rank5 != 2) || !banded && (rank5 != 0 || dots < 2*1024/mhalib.DefaultFlashBlockK) {
			t.Fatalf("%s: %d DotGenerals, %d of rank 5 (banded path expected: %v)", backend.Name(), dots, rank5, banded)
		}
	})
}
