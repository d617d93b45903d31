//go:build lessons || solution

package mha

// The grader of lesson 7. `mhalab lessons check 7` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 7, Dir: "07_mha"}

// randomParams draws the weights of an attention layer with E features, h heads, kdim and vdim.
func randomParams(seed uint64, E, h, kdim, vdim int) mhatest.MHAParams {
	w := func(i uint64, out, in int) *mhatest.Tensor { return grader.Scale(grader.Rand(seed*16+i, out, in), 0.7) }
	return mhatest.MHAParams{E: E, NumHeads: h,
		Wq: w(1, E, E), Wk: w(2, E, kdim), Wv: w(3, E, vdim), Wo: w(4, E, E),
		Bq: w(5, 1, E).Reshape(E), Bk: w(6, 1, E).Reshape(E), Bv: w(7, 1, E).Reshape(E), Bo: w(8, 1, E).Reshape(E)}
}

// attend runs the student's MultiHeadAttention; self means query is passed as key and value.
func attend(t *testing.T, p mhatest.MHAParams, query, key, value *mhatest.Tensor, self bool) *mhatest.Tensor {
	t.Helper()
	what := fmt.Sprintf("MultiHeadAttention(query %v, key %v, value %v, weights, %d)", query.Shape, key.Shape, value.Shape, p.NumHeads)
	if self {
		what = fmt.Sprintf("MultiHeadAttention(x, x, x, weights, %d) with x %v", p.NumHeads, query.Shape)
	}
	inputs := []any{}
	for _, x := range []*mhatest.Tensor{p.Wq, p.Wk, p.Wv, p.Bq, p.Bk, p.Bv, p.Wo, p.Bo, query, key, value} {
		inputs = append(inputs, grader.F32(x))
	}
	if self {
		inputs = inputs[:9]
	}
	out := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		w := Weights{Wq: in[0], Wk: in[1], Wv: in[2], Bq: in[3], Bk: in[4], Bv: in[5], Wo: in[6], Bo: in[7]}
		if self {
			return []*Node{MultiHeadAttention(in[8], in[8], in[8], w, p.NumHeads)}
		}
		return []*Node{MultiHeadAttention(in[8], in[9], in[10], w, p.NumHeads)}
	}, inputs...)
	y, err := grader.Host(out[0])
	if err != nil {
		lesson.Fatalf(t, "%s: %v", what, err)
	}
	return y
}

func reference(t *testing.T, p mhatest.MHAParams, query, key, value *mhatest.Tensor) *mhatest.Tensor {
	t.Helper()
	out, _, err := mhatest.MHA(p, query, key, value, mhatest.MHAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLesson(t *testing.T) {
	t.Run("output shape", func(t *testing.T) {
		p := randomParams(1, 8, 2, 6, 5)
		q, k, v := grader.Rand(1, 2, 3, 8), grader.Rand(2, 2, 5, 6), grader.Rand(3, 2, 5, 5)
		got := attend(t, p, q, k, v, false)
		if !mhatest.SameShape(got.Shape, []int{2, 3, 8}) {
			lesson.Failf(t, "MultiHeadAttention(query [2 3 8], key [2 5 6], value [2 5 5], weights, 2): expected shape [2 3 8] ([B, Lq, E]), got %v", got.Shape)
		}
	})
	t.Run("self-attention", func(t *testing.T) {
		p := randomParams(2, 8, 2, 8, 8)
		x := grader.Rand(4, 2, 4, 8)
		lesson.CloseHost(t, "self-attention vs the float64 reference (mhatest.MHA)", attend(t, p, x, x, x, true), reference(t, p, x, x, x), 1e-5)
	})
	t.Run("cross-attention with kdim and vdim", func(t *testing.T) {
		p := randomParams(3, 8, 2, 6, 5)
		q, k, v := grader.Rand(5, 2, 3, 8), grader.Rand(6, 2, 5, 6), grader.Rand(7, 2, 5, 5)
		lesson.CloseHost(t, "cross-attention (Lq=3, Lk=5, kdim=6, vdim=5) vs the float64 reference", attend(t, p, q, k, v, false), reference(t, p, q, k, v), 1e-5)
	})
	t.Run("four heads", func(t *testing.T) {
		p := randomParams(4, 8, 4, 8, 8)
		q, k, v := grader.Rand(8, 1, 3, 8), grader.Rand(9, 1, 4, 8), grader.Rand(10, 1, 4, 8)
		q = grader.Scale(q, 3)
		lesson.CloseHost(t, "4 heads of 2 features vs the float64 reference", attend(t, p, q, k, v, false), reference(t, p, q, k, v), 1e-5)
	})
	for _, c := range []struct{ check, fixture string }{
		{"matches PyTorch with Lq = Lk", "mha_self"},
		{"matches PyTorch cross-attention", "mha_cross"},
	} {
		t.Run(c.check, func(t *testing.T) {
			// nn.MultiheadAttention(8, 2, batch_first=True) (lessons/testdata/<fixture>.safetensors).
			m := grader.LoadTorchMHA(t, c.fixture)
			got := attend(t, m.Params, m.Query, m.Key, m.Value, false)
			lesson.CloseHost(t, fmt.Sprintf("your output vs PyTorch's attn_output (%s: Lq=%d, Lk=%d)", c.fixture, m.Lq, m.Lk), got, m.Out, 1e-5)
		})
	}
}
