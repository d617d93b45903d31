//go:build lessons || solution

package gqa

// The grader of lesson 11. `mhalab lessons check 11` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 11, Dir: "11_gqa"}

// attend runs the student's GroupedQueryAttention; repeated names a node of its graph that holds
// k or v repeated to the query heads ("" if none). It is a local variable: a student's code
// cannot reach it (a package-level one could be overwritten from the student's file).
func attend(t *testing.T, q, k, v *mhatest.Tensor) (out, weights *mhatest.Tensor, repeated string) {
	t.Helper()
	what := fmt.Sprintf("GroupedQueryAttention(q %v, k %v, v %v)", q.Shape, k.Shape, v.Shape)
	Hq, Lk := q.Shape[1], k.Shape[2]
	res := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		out, weights := GroupedQueryAttention(in[0], in[1], in[2])
		if k.Shape[1] != Hq {
			for _, n := range g.Nodes() {
				d := n.Shape().Dimensions
				if len(d) == 4 && d[0] == k.Shape[0] && d[1] == Hq && d[2] == Lk && (d[3] == k.Shape[3] || d[3] == v.Shape[3]) {
					repeated = n.String()
				}
			}
		}
		return []*Node{out, weights}
	}, grader.F32(q), grader.F32(k), grader.F32(v))
	// What the student's program found in its graph (the judge never builds the student's graph).
	repeated = grader.Call(lesson, t, "look for repeated k or v in the graph of "+what, func() string { return repeated })
	out, err := grader.Host(res[0])
	if err != nil {
		lesson.Fatalf(t, "%s, out: %v", what, err)
	}
	weights, err = grader.Host(res[1])
	if err != nil {
		lesson.Fatalf(t, "%s, weights: %v", what, err)
	}
	return out, weights, repeated
}

// modPairing is attention with query head h paired with key/value head h % Hkv (a usual mistake).
func modPairing(q, k, v *mhatest.Tensor) *mhatest.Tensor {
	Hq, Hkv := q.Shape[1], k.Shape[1]
	B, Lk, dk, dv := k.Shape[0], k.Shape[2], k.Shape[3], v.Shape[3]
	kr, vr := mhatest.New(B, Hq, Lk, dk), mhatest.New(B, Hq, Lk, dv)
	for b := 0; b < B; b++ {
		for h := 0; h < Hq; h++ {
			for j := 0; j < Lk; j++ {
				for e := 0; e < dk; e++ {
					kr.Set(k.At(b, h%Hkv, j, e), b, h, j, e)
				}
				for e := 0; e < dv; e++ {
					vr.Set(v.At(b, h%Hkv, j, e), b, h, j, e)
				}
			}
		}
	}
	_, w := mhatest.SDPA(q, kr, vr, nil, 0)
	return w
}

func TestLesson(t *testing.T) {
	t.Run("shapes", func(t *testing.T) {
		q, k, v := grader.Rand(1, 2, 6, 3, 8), grader.Rand(2, 2, 2, 5, 8), grader.Rand(3, 2, 2, 5, 4)
		out, weights, _ := attend(t, q, k, v)
		if !mhatest.SameShape(out.Shape, []int{2, 6, 3, 4}) {
			lesson.Failf(t, "out: expected shape [2 6 3 4] ([B, Hq, Lq, dv]), got %v", out.Shape)
		}
		if !mhatest.SameShape(weights.Shape, []int{2, 6, 3, 5}) {
			lesson.Failf(t, "weights: expected shape [2 6 3 5] ([B, Hq, Lq, Lk]), got %v", weights.Shape)
		}
	})
	for _, c := range []struct {
		name     string
		Hq, Hkv  int
		seedBase uint64
	}{{"GQA 4 query heads, 2 kv heads", 4, 2, 10}, {"MQA 3 query heads, 1 kv head", 3, 1, 20}, {"MHA 2 heads", 2, 2, 30}} {
		t.Run(c.name, func(t *testing.T) {
			q := grader.Rand(c.seedBase, 2, c.Hq, 3, 4)
			k, v := grader.Rand(c.seedBase+1, 2, c.Hkv, 5, 4), grader.Rand(c.seedBase+2, 2, c.Hkv, 5, 3)
			out, weights, _ := attend(t, q, k, v)
			wantOut, wantWeights := mhatest.Attention(q, k, v, mhatest.AttentionSpec{})
			if !lesson.CloseHost(t, "weights vs mhatest.Attention", weights, wantWeights, 1e-5) {
				if d, err := mhatest.MaxAbsDiff(weights, modPairing(q, k, v)); err == nil && d < 1e-5 && c.Hkv > 1 && c.Hkv < c.Hq {
					lesson.Failf(t, "Your query head h uses key/value head h %% Hkv; it should use h / (Hq/Hkv): heads 0 and 1 share kv head 0.")
				}
			}
			lesson.CloseHost(t, "out vs mhatest.Attention", out, wantOut, 1e-5)
		})
	}
	t.Run("k and v are not repeated", func(t *testing.T) {
		q, k, v := grader.Rand(40, 1, 8, 3, 4), grader.Rand(41, 1, 2, 7, 4), grader.Rand(42, 1, 2, 7, 4)
		_, _, repeated := attend(t, q, k, v)
		if repeated != "" {
			lesson.Failf(t, "node %s holds the keys or values repeated to 8 heads [1, 8, 7, 4]: reshape q instead, so that each key head is used as it is", repeated)
		}
	})
	t.Run("matches PyTorch with enable GQA", func(t *testing.T) {
		// F.scaled_dot_product_attention(q, k, v, enable_gqa=True), 4 query heads over 2 kv heads
		// (lessons/testdata/modern_gqa.safetensors, written by parity/modern_gen.py).
		f := grader.LoadFixture(t, "modern_gqa")
		out, _, _ := attend(t, f.Get(t, "query"), f.Get(t, "key"), f.Get(t, "value"))
		lesson.CloseHost(t, "out vs PyTorch's scaled_dot_product_attention(enable_gqa=True)", out, f.Get(t, "out64"), 1e-5)
	})
}
