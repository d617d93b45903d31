package mhalib_test

import (
	"math"
	"math/rand/v2"
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
)

// sdpaCase is one configuration of ScaledDotProductAttention compared with mhatest.SDPA.
type sdpaCase struct {
	name                 string
	B, h, Lq, Lk, dk, dv int
	attn                 func(rng *rand.Rand, B, h, Lq, Lk int) mhatest.Mask
	keyPad               func(rng *rand.Rand, B, Lk int) mhatest.Mask
	causal               mhalib.Causal
	fill, scale          float64
	done                 bool // built with Done: no weights (on XLA, normalised after the weighted sum)
}

// withDone returns the cases and a copy of each built with Done ("/Done").
func withDone(cases []sdpaCase) []sdpaCase {
	for _, c := range cases[:len(cases):len(cases)] {
		c.name, c.done = c.name+"/Done", true
		cases = append(cases, c)
	}
	return cases
}

func sdpaCases() []sdpaCase {
	bool2D := func(kind mhatest.MaskKind) func(rng *rand.Rand, B, h, Lq, Lk int) mhatest.Mask {
		return func(rng *rand.Rand, B, h, Lq, Lk int) mhatest.Mask { return randBoolMask(rng, kind, 0.4, Lq, Lk) }
	}
	add3D := func(rng *rand.Rand, B, h, Lq, Lk int) mhatest.Mask {
		t := mhatest.Rand(rng, -2, 2, B*h, Lq, Lk)
		t.Data[0] = math.Inf(-1)
		return mhatest.NewAdditiveMask(t)
	}
	bool4D := func(rng *rand.Rand, B, h, Lq, Lk int) mhatest.Mask {
		return randBoolMask(rng, mhatest.BlockedWhereTrue, 0.3, B, h, Lq, Lk)
	}
	bool4D1 := func(rng *rand.Rand, B, h, Lq, Lk int) mhatest.Mask {
		return randBoolMask(rng, mhatest.AttendWhereTrue, 0.7, B, 1, Lq, Lk)
	}
	pad := func(rng *rand.Rand, B, Lk int) mhatest.Mask {
		data := make([]bool, B*Lk)
		data[Lk-1] = true // batch 0: last key is padding
		return mhatest.NewBoolMask(mhatest.BlockedWhereTrue, data, B, Lk)
	}
	return []sdpaCase{
		{name: "plain"},
		{name: "dv!=dk", dv: 5},
		{name: "mask2D/blocked", attn: bool2D(mhatest.BlockedWhereTrue)},
		{name: "mask2D/attend", attn: bool2D(mhatest.AttendWhereTrue)},
		{name: "mask3D/additive", attn: add3D},
		{name: "mask4D/blocked", attn: bool4D},
		{name: "mask4D/B1/attend", attn: bool4D1},
		{name: "keypad", keyPad: pad},
		{name: "causal/top-left", causal: mhalib.CausalTopLeft},
		{name: "causal/bottom-right/Lq<Lk", Lq: 2, Lk: 5, causal: mhalib.CausalBottomRight},
		{name: "causal/bottom-right/Lq>Lk/fully-masked", Lq: 5, Lk: 3, causal: mhalib.CausalBottomRight},
		{name: "keypad+causal/fill-1e9", keyPad: pad, causal: mhalib.CausalTopLeft, fill: -1e9, Lq: 4, Lk: 4},
		// A finite fill matters for fully masked rows: masked_fill makes them uniform.
		{name: "fully-masked/fill-1e9", Lq: 5, Lk: 3, causal: mhalib.CausalBottomRight, attn: bool2D(mhatest.BlockedWhereTrue), fill: -1e9},
		{name: "fully-masked/additive+bool/fill-1e9", Lq: 5, Lk: 3, causal: mhalib.CausalBottomRight, attn: add3D, keyPad: pad, fill: -1e9},
		{name: "scale", scale: 0.7, attn: add3D},
	}
}

func (c *sdpaCase) defaults() {
	for _, d := range []struct {
		p *int
		v int
	}{{&c.B, 2}, {&c.h, 2}, {&c.Lq, 3}, {&c.Lk, 4}, {&c.dk, 3}} {
		if *d.p == 0 {
			*d.p = d.v
		}
	}
	if c.dv == 0 {
		c.dv = c.dk
	}
}

// TestScaledDotProductAttention checks output, weights and gradients against the float64
// references, through DoneWithWeights and, for every case again, through Done: on XLA, Done
// normalises after the weighted sum (softmaxSum, with its own custom gradient).
func TestScaledDotProductAttention(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range withDone(sdpaCases()) {
			t.Run(c.name, func(t *testing.T) {
				c.defaults()
				rng := rand.New(rand.NewPCG(seedOf(c.name), 3))
				q := mhatest.Rand(rng, -1, 1, c.B, c.h, c.Lq, c.dk)
				k := mhatest.Rand(rng, -1, 1, c.B, c.h, c.Lk, c.dk)
				v := mhatest.Rand(rng, -1, 1, c.B, c.h, c.Lk, c.dv)
				cot := mhatest.Rand(rng, -1, 1, c.B, c.h, c.Lq, c.dv)
				spec := mhatest.MaskSpec{Causal: causalRef(c.causal), Fill: c.fill}
				if c.attn != nil {
					spec.AttnMask = c.attn(rng, c.B, c.h, c.Lq, c.Lk)
				}
				if c.keyPad != nil {
					spec.KeyPaddingMask = c.keyPad(rng, c.B, c.Lk)
				}
				additive, blocked, err := spec.Parts(c.B, c.h, c.Lq, c.Lk) // float masks added, bool/causal masked_fill
				if err != nil {
					t.Fatal(err)
				}
				sdpaRef := func() (*mhatest.Tensor, *mhatest.Tensor) {
					return mhatest.SDPAMaskedFill(q, k, v, additive, blocked, spec.FillValue(), c.scale)
				}
				want, wantW := sdpaRef()

				dt := dtypes.Float64
				exec := MustNewExec(backend, func(in []*Node) []*Node {
					b := mhalib.ScaledDotProductAttention(in[0], in[1], in[2]).Causal(c.causal)
					g := in[0].Graph()
					if !spec.AttnMask.IsZero() {
						b.AttnMask(maskConst(g, spec.AttnMask, dt))
					}
					if !spec.KeyPaddingMask.IsZero() {
						b.KeyPaddingMask(maskConst(g, spec.KeyPaddingMask, dt))
					}
					if c.fill != 0 {
						b.Fill(c.fill)
					}
					if c.scale != 0 {
						b.Scale(c.scale)
					}
					var out, w *Node
					if c.done {
						out, w = b.Done(), ZerosLike(in[0]) // no weights: a placeholder output
					} else {
						out, w = b.DoneWithWeights()
					}
					loss := ReduceAllSum(Mul(out, in[3]))
					return append([]*Node{out, w}, Gradient(loss, in[0], in[1], in[2])...)
				})
				res, err := exec.Exec(toTensor(q, dt), toTensor(k, dt), toTensor(v, dt), toTensor(cot, dt))
				if err != nil {
					t.Fatal(err)
				}
				assertClose(t, "output", res[0], want, 1e-13)
				if !c.done {
					assertClose(t, "weights", res[1], wantW, 1e-13)
					if err := inspect.CheckRowsSumToOne(res[1], 1e-12); err != nil {
						t.Error(err)
					}
				}
				loss := func() float64 { out, _ := sdpaRef(); return mhatest.Loss(out, cot) }
				for i, x := range []*mhatest.Tensor{q, k, v} {
					assertClose(t, "gradient "+"qkv"[i:i+1], res[2+i], mhatest.NumGrad(loss, x, 1e-6), 1e-8)
				}
			})
		}
	})
}

// A query row whose every key is blocked gets zero weights, zero output and zero gradient with
// the default −Inf fill, and uniform weights with the −1e9 fill; never NaN.
func TestFullyMaskedRow(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, fill := range []float64{math.Inf(-1), mhalib.FillMinus1e9} {
			rng := rand.New(rand.NewPCG(5, 5))
			q := mhatest.Rand(rng, -1, 1, 1, 1, 2, 3)
			k := mhatest.Rand(rng, -1, 1, 1, 1, 4, 3)
			v := mhatest.Rand(rng, -1, 1, 1, 1, 4, 3)
			// Row 0 blocks every key; row 1 blocks key 0 only (MaskBlockedWhereTrue).
			mask := [][]bool{{true, true, true, true}, {true, false, false, false}}
			exec := MustNewExec(backend, func(q, k, v *Node) []*Node {
				out, w := mhalib.ScaledDotProductAttention(q, k, v).
					AttnMask(mhalib.MaskBlockedWhereTrue(Const(q.Graph(), mask))).Fill(fill).DoneWithWeights()
				grads := Gradient(ReduceAllSum(out), q, k, v)
				return append([]*Node{out, w}, grads...)
			})
			res := exec.MustExec(toTensor(q, dtypes.Float64), toTensor(k, dtypes.Float64), toTensor(v, dtypes.Float64))
			w := tensors.MustCopyFlatData[float64](res[1])
			out := tensors.MustCopyFlatData[float64](res[0])
			dq := tensors.MustCopyFlatData[float64](res[2])
			for _, r := range res {
				for _, x := range tensors.MustCopyFlatData[float64](r) {
					if math.IsNaN(x) || math.IsInf(x, 0) {
						t.Fatalf("fill %g: non-finite value in %s", fill, r)
					}
				}
			}
			if math.IsInf(fill, -1) {
				for j := 0; j < 4; j++ {
					if w[j] != 0 {
						t.Errorf("fill −inf: weight[0][%d] = %g, want 0", j, w[j])
					}
				}
				for d := 0; d < 3; d++ {
					if out[d] != 0 || dq[d] != 0 {
						t.Errorf("fill −inf: output/gradient of the fully masked row = %g/%g, want 0", out[d], dq[d])
					}
				}
			} else {
				for j := 0; j < 4; j++ {
					if math.Abs(w[j]-0.25) > 1e-15 {
						t.Errorf("fill −1e9: weight[0][%d] = %g, want uniform 0.25", j, w[j])
					}
				}
			}
			if w[4] != 0 || math.Abs(w[5]+w[6]+w[7]-1) > 1e-15 {
				t.Errorf("fill %g: partially masked row weights %v", fill, w[4:])
			}
		}
	})
}

// Changing future tokens must not change the causal outputs of earlier positions.
func TestCausalIgnoresTheFuture(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(9, 9))
		B, L, E, h := 2, 5, 8, 2
		x := mhatest.Rand(rng, -1, 1, B, L, E)
		x2 := x.Clone()
		for b := range B {
			for e := range E {
				x2.Set(x.At(b, L-1, e)+3, b, L-1, e) // perturb the last position only
			}
		}
		ctx := context.New()
		ctx.SetParam(context.ParamInitialSeed, int64(1))
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) *Node {
			return mhalib.MultiHeadAttention(ctx, x, x, x, h).Causal(mhalib.CausalTopLeft).Done()
		})
		a := fromTensor(t, exec.MustExec(toTensor(x, dtypes.Float64))[0])
		bOut := fromTensor(t, exec.MustExec(toTensor(x2, dtypes.Float64))[0])
		for b := range B {
			for i := range L {
				for e := range E {
					same := a.At(b, i, e) == bOut.At(b, i, e)
					if i < L-1 && !same {
						t.Fatalf("output at position %d changed when only position %d changed", i, L-1)
					}
					if i == L-1 && same && e == 0 {
						t.Fatalf("output at the perturbed position did not change")
					}
				}
			}
		}
	})
}

// Dropout: off in inference, on in training, seeded, survivors scaled by 1/(1−p).
func TestAttentionDropout(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(11, 11))
		B, h, L, d := 2, 2, 16, 4
		q := toTensor(mhatest.Rand(rng, -1, 1, B, h, L, d), dtypes.Float64)
		k := toTensor(mhatest.Rand(rng, -1, 1, B, h, L, d), dtypes.Float64)
		v := toTensor(mhatest.Rand(rng, -1, 1, B, h, L, d), dtypes.Float64)
		const p = 0.25
		run := func(training bool, seed int64) []*tensors.Tensor {
			ctx := context.New()
			if err := ctx.SetRNGStateFromSeed(seed); err != nil {
				t.Fatal(err)
			}
			exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, q, k, v *Node) []*Node {
				ctx.SetTraining(q.Graph(), training)
				out, w := mhalib.ScaledDotProductAttention(q, k, v).Dropout(ctx, p).DoneWithWeights()
				plain, plainW := mhalib.ScaledDotProductAttention(q, k, v).DoneWithWeights()
				// Recompute the output from the returned (dropped) weights: they must be the ones used.
				again := DotGeneral(w, []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1})
				return []*Node{out, w, plain, plainW, again}
			})
			return exec.MustExec(q, k, v)
		}
		eval := run(false, 1)
		if d, _ := mhatest.MaxAbsDiff(fromTensor(t, eval[0]), fromTensor(t, eval[2])); d != 0 {
			t.Errorf("inference: dropout changed the output by %g", d)
		}
		train := run(true, 1)
		w, plainW := tensors.MustCopyFlatData[float64](train[1]), tensors.MustCopyFlatData[float64](train[3])
		zeros := 0
		for i := range w {
			switch {
			case w[i] == 0:
				zeros++
			case math.Abs(w[i]-plainW[i]/(1-p)) > 1e-15:
				t.Fatalf("training: kept weight %g, want %g / (1 − %g)", w[i], plainW[i], p)
			}
		}
		frac := float64(zeros) / float64(len(w))
		if frac < p-0.08 || frac > p+0.08 {
			t.Errorf("training: dropped fraction %.3f, want about %g", frac, p)
		}
		assertClose(t, "output = dropped weights · v", train[0], fromTensor(t, train[4]), 1e-14)
		again := run(true, 1)
		if d, _ := mhatest.MaxAbsDiff(fromTensor(t, train[1]), fromTensor(t, again[1])); d != 0 {
			t.Errorf("same seed, different dropout masks (max diff %g)", d)
		}
		other := run(true, 2)
		if d, _ := mhatest.MaxAbsDiff(fromTensor(t, train[1]), fromTensor(t, other[1])); d == 0 {
			t.Errorf("different seeds gave the same dropout mask")
		}
	})
}
