//go:build lessons || solution

package kvcache

// The grader of lesson 9. `mhalab lessons check 9` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 9, Dir: "09_kvcache"}

// token returns position t of x [B, h, L, d] as [B, h, 1, d].
func token(x *mhatest.Tensor, t int) *mhatest.Tensor {
	B, h, d := x.Shape[0], x.Shape[1], x.Shape[3]
	out := mhatest.New(B, h, 1, d)
	for b := range B {
		for n := range h {
			for c := range d {
				out.Set(x.At(b, n, t, c), b, n, 0, c)
			}
		}
	}
	return out
}

// prefix returns positions 0…t of x [B, h, L, d].
func prefix(x *mhatest.Tensor, t int) *mhatest.Tensor {
	B, h, d := x.Shape[0], x.Shape[1], x.Shape[3]
	out := mhatest.New(B, h, t+1, d)
	for b := range B {
		for n := range h {
			for j := 0; j <= t; j++ {
				for c := range d {
					out.Set(x.At(b, n, j, c), b, n, j, c)
				}
			}
		}
	}
	return out
}

// stale is a cache full of large leftovers: any weight they get shows in the output.
func stale(seed uint64, shape ...int) *mhatest.Tensor {
	return grader.Scale(grader.Rand(seed, shape...), 40)
}

// decoder compiles DecodeStep once; step runs it and returns out and the two caches.
type decoder struct {
	run func(inputs ...any) []*tensors.Tensor
}

func newDecoder(t *testing.T, what string) decoder {
	t.Helper()
	return decoder{lesson.Compile(t, what, func(g *Graph, in []*Node) []*Node {
		out, k, v := DecodeStep(in[0], in[1], in[2], in[3], in[4], in[5])
		return []*Node{out, k, v}
	})}
}

func (d decoder) step(t *testing.T, q, k, v, kCache, vCache *mhatest.Tensor, pos int) (out, kc, vc *mhatest.Tensor) {
	t.Helper()
	res := d.run(grader.F32(q), grader.F32(k), grader.F32(v), grader.F32(kCache), grader.F32(vCache), tensors.FromScalar(int32(pos)))
	host := make([]*mhatest.Tensor, 3)
	for i, r := range res {
		h, err := grader.Host(r)
		if err != nil {
			lesson.Fatalf(t, "DecodeStep at pos %d, result %d: %v", pos, i+1, err)
		}
		host[i] = h
	}
	if !mhatest.SameShape(host[0].Shape, []int{q.Shape[0], q.Shape[1], 1, v.Shape[3]}) {
		lesson.Fatalf(t, "DecodeStep at pos %d: out: expected shape %v ([B, h, 1, dv]), got %v", pos, []int{q.Shape[0], q.Shape[1], 1, v.Shape[3]}, host[0].Shape)
	}
	if !mhatest.SameShape(host[1].Shape, kCache.Shape) || !mhatest.SameShape(host[2].Shape, vCache.Shape) {
		lesson.Fatalf(t, "DecodeStep at pos %d: the caches must keep their shapes %v and %v, got %v and %v", pos, kCache.Shape, vCache.Shape, host[1].Shape, host[2].Shape)
	}
	return host[0], host[1], host[2]
}

// decode runs DecodeStep for every position of q, k, v [B, h, L, d] from stale caches of
// maxLen rows and returns the outputs stacked: [B, h, L, dv].
func decode(t *testing.T, what string, q, k, v *mhatest.Tensor, maxLen int) *mhatest.Tensor {
	t.Helper()
	B, h, L, dk, dv := q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3], v.Shape[3]
	d := newDecoder(t, what)
	kc, vc := stale(90, B, h, maxLen, dk), stale(91, B, h, maxLen, dv)
	outs := mhatest.New(B, h, L, dv)
	for pos := range L {
		var out *mhatest.Tensor
		out, kc, vc = d.step(t, token(q, pos), token(k, pos), token(v, pos), kc, vc, pos)
		for b := range B {
			for n := range h {
				for c := range dv {
					outs.Set(out.At(b, n, 0, c), b, n, pos, c)
				}
			}
		}
	}
	return outs
}

func TestLesson(t *testing.T) {
	t.Run("writes the new key and value at pos", func(t *testing.T) {
		d := newDecoder(t, "DecodeStep(q, newK, newV, kCache [2 2 5 4], vCache [2 2 5 3], pos=2)")
		q, k, v := grader.Rand(1, 2, 2, 1, 4), grader.Rand(2, 2, 2, 1, 4), grader.Rand(3, 2, 2, 1, 3)
		kCache, vCache := stale(4, 2, 2, 5, 4), stale(5, 2, 2, 5, 3)
		_, kc, vc := d.step(t, q, k, v, kCache, vCache, 2)
		wantK, wantV := kCache.Clone(), vCache.Clone()
		for b := range 2 {
			for n := range 2 {
				for c := range 4 {
					wantK.Set(k.At(b, n, 0, c), b, n, 2, c)
				}
				for c := range 3 {
					wantV.Set(v.At(b, n, 0, c), b, n, 2, c)
				}
			}
		}
		lesson.CloseHost(t, "kCache after the step (row 2 = newK, the other rows unchanged)", kc, wantK, 0)
		lesson.CloseHost(t, "vCache after the step (row 2 = newV, the other rows unchanged)", vc, wantV, 0)
	})
	t.Run("first step attends only to itself", func(t *testing.T) {
		d := newDecoder(t, "DecodeStep(..., pos=0)")
		q, k, v := grader.Rand(6, 1, 2, 1, 4), grader.Rand(7, 1, 2, 1, 4), grader.Rand(8, 1, 2, 1, 3)
		out, _, _ := d.step(t, q, k, v, stale(9, 1, 2, 4, 4), stale(10, 1, 2, 4, 3), 0)
		lesson.CloseHost(t, "out at pos 0 (one visible key: its weight is 1, so out = newV)", out, v, 1e-6)
	})
	t.Run("positions after pos get no weight", func(t *testing.T) {
		d := newDecoder(t, "DecodeStep(..., pos=2) with stale rows 3 and 4")
		k, v := grader.Rand(11, 1, 2, 5, 4), grader.Rand(12, 1, 2, 5, 3)
		kCache, vCache := k.Clone(), v.Clone()
		for b := range 1 { // rows 3 and 4 hold stale leftovers
			for n := range 2 {
				for j := 3; j < 5; j++ {
					for c := range 4 {
						kCache.Set(40, b, n, j, c)
					}
					for c := range 3 {
						vCache.Set(-40, b, n, j, c)
					}
				}
			}
		}
		q := grader.Rand(13, 1, 2, 1, 4)
		out, _, _ := d.step(t, q, token(k, 2), token(v, 2), kCache, vCache, 2)
		want, _ := mhatest.SDPA(q, prefix(k, 2), prefix(v, 2), nil, 0)
		lesson.CloseHost(t, "out at pos 2 vs attention over keys 0, 1, 2 only", out, want, 1e-5)
	})
	t.Run("decoding a sequence equals causal attention", func(t *testing.T) {
		// The sequence length, the cache size and the widths are drawn afresh for every run.
		L := grader.Dim(1, 2, 7)
		maxLen, dk, dv := L+grader.Dim(2, 0, 3), grader.Dim(3, 1, 6), grader.Dim(4, 1, 6)
		q, k, v := grader.Rand(14, 2, 2, L, dk), grader.Rand(15, 2, 2, L, dk), grader.Rand(16, 2, 2, L, dv)
		got := decode(t, fmt.Sprintf("DecodeStep, one compiled graph for pos = 0…%d, caches of %d rows", L-1, maxLen), q, k, v, maxLen)
		causal, err := mhatest.CausalBias(mhatest.TopLeft, 2, 2, L, L, mhatest.DefaultFill())
		if err != nil {
			t.Fatal(err)
		}
		want, _ := mhatest.SDPA(q, k, v, causal, 0)
		lesson.CloseHost(t, "outputs of 6 decoding steps vs causal attention over the whole sequence", got, want, 1e-5)
	})
	t.Run("matches PyTorch causal self-attention", func(t *testing.T) {
		// nn.MultiheadAttention(8, 2) with is_causal (lessons/testdata/mha_is_causal.safetensors):
		// the grader projects and splits the heads, you decode the 4 tokens one by one, the grader
		// merges the heads and applies out_proj.
		m := grader.LoadTorchMHA(t, "mha_is_causal")
		got := decode(t, fmt.Sprintf("DecodeStep over PyTorch's %d tokens", m.Lq), m.Q, m.K, m.V, m.Lq)
		lesson.CloseHost(t, "out_proj(your decoded outputs) vs PyTorch's causal attn_output", m.OutProj(got), m.Out, 1e-5)
	})
}
