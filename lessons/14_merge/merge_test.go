//go:build lessons || solution

package merge

// The grader of lesson 14. `mhalab lessons check 14` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"math"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 14, Dir: "14_merge"}

// part returns x cut to [from, to) along axis (2: keys or values [B, h, L, d]; 3: a bias's
// columns [B, h, Lq, Lk]), a copy.
func part(x *mhatest.Tensor, axis, from, to int) *mhatest.Tensor {
	shape := append([]int(nil), x.Shape...)
	shape[axis] = to - from
	out := mhatest.New(shape...)
	idx := make([]int, len(shape))
	for flat := range out.Data {
		rest := flat
		for a := len(shape) - 1; a >= 0; a-- {
			idx[a], rest = rest%shape[a], rest/shape[a]
		}
		idx[axis] += from
		out.Data[flat] = x.At(idx...)
	}
	return out
}

func keys(x *mhatest.Tensor, from, to int) *mhatest.Tensor    { return part(x, 2, from, to) }
func columns(x *mhatest.Tensor, from, to int) *mhatest.Tensor { return part(x, 3, from, to) }

// shard is the float64 attention of q over keys [from, to) of k and v, with an optional bias
// [B, h, Lq, to−from]: its output and log-sum-exp.
func shard(q, k, v, bias *mhatest.Tensor, from, to int) (out, lse *mhatest.Tensor) {
	return mhatest.OnlineSoftmaxAttention(q, keys(k, from, to), keys(v, from, to), bias, 0, to-from)
}

func merge(t *testing.T, out1, lse1, out2, lse2 *mhatest.Tensor) (out, lse *mhatest.Tensor) {
	t.Helper()
	what := fmt.Sprintf("MergeShards(out1 %v, lse1 %v, out2 %v, lse2 %v)", out1.Shape, lse1.Shape, out2.Shape, lse2.Shape)
	res := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		out, lse := MergeShards(in[0], in[1], in[2], in[3])
		return []*Node{out, lse}
	}, grader.F32(out1), grader.F32(lse1), grader.F32(out2), grader.F32(lse2))
	out, err := grader.Host(res[0])
	if err != nil {
		lesson.Fatalf(t, "%s, out: %v", what, err)
	}
	lse, err = grader.Host(res[1])
	if err != nil {
		lesson.Fatalf(t, "%s, lse: %v", what, err)
	}
	return out, lse
}

// average is the merge that forgets the weights: (out1 + out2) / 2.
func average(a, b *mhatest.Tensor) *mhatest.Tensor {
	out := a.Clone()
	for i := range out.Data {
		out.Data[i] = (a.Data[i] + b.Data[i]) / 2
	}
	return out
}

func hasNaN(x *mhatest.Tensor) bool {
	for _, v := range x.Data {
		if math.IsNaN(v) {
			return true
		}
	}
	return false
}

// check compares the merge of the shards [0, cut) and [cut, Lk) with the attention over all keys.
func check(t *testing.T, q, k, v *mhatest.Tensor, cut int, bias1, bias2, biasAll *mhatest.Tensor) {
	t.Helper()
	Lk := k.Shape[2]
	out1, lse1 := shard(q, k, v, bias1, 0, cut)
	out2, lse2 := shard(q, k, v, bias2, cut, Lk)
	wantOut, wantLSE := mhatest.OnlineSoftmaxAttention(q, k, v, biasAll, 0, Lk)
	out, lse := merge(t, out1, lse1, out2, lse2)
	if hasNaN(out) || hasNaN(lse) {
		lesson.Fatalf(t, "Your merge returns NaN. A shard with no visible key has lse = −∞ and must weigh 0; −∞ − (−∞) and 0/0 are NaN.")
	}
	if !lesson.CloseHost(t, "out vs attention over all keys (float64)", out, wantOut, 1e-5) {
		if d, err := mhatest.MaxAbsDiff(out, average(out1, out2)); err == nil && d < 1e-5 {
			lesson.Failf(t, "Your out is the plain average of the shards' outputs: each shard counts in proportion to its softmax mass exp(lse_s).")
		}
	}
	lesson.CloseHost(t, "lse vs log-sum-exp over all keys (float64)", lse, wantLSE, 1e-5)
}

func TestLesson(t *testing.T) {
	t.Run("shapes", func(t *testing.T) {
		q, k, v := grader.Rand(1, 2, 3, 5, 4), grader.Rand(2, 2, 3, 6, 4), grader.Rand(3, 2, 3, 6, 7)
		out1, lse1 := shard(q, k, v, nil, 0, 2)
		out2, lse2 := shard(q, k, v, nil, 2, 6)
		out, lse := merge(t, out1, lse1, out2, lse2)
		if !mhatest.SameShape(out.Shape, []int{2, 3, 5, 7}) || !mhatest.SameShape(lse.Shape, []int{2, 3, 5}) {
			lesson.Fatalf(t, "expected out [2 3 5 7] and lse [2 3 5], got %v and %v", out.Shape, lse.Shape)
		}
	})
	for _, cut := range []int{3, 1, 6} {
		t.Run(fmt.Sprintf("two shards, cut at key %d of 7", cut), func(t *testing.T) {
			q, k, v := grader.Rand(10, 1, 2, 4, 4), grader.Rand(11, 1, 2, 7, 4), grader.Rand(12, 1, 2, 7, 3)
			check(t, q, k, v, cut, nil, nil, nil)
		})
	}
	t.Run("large logits (lse ≈ 100: exp(lse) overflows float32)", func(t *testing.T) {
		q, k, v := grader.Scale(grader.Rand(20, 1, 2, 4, 4), 12), grader.Scale(grader.Rand(21, 1, 2, 6, 4), 12), grader.Rand(22, 1, 2, 6, 3)
		check(t, q, k, v, 2, nil, nil, nil)
	})
	t.Run("a shard sees nothing (causal: queries 0 and 1 see no key of the second shard)", func(t *testing.T) {
		// 4 queries, 6 keys, top-left causal: query i sees keys 0 … i. Shard 2 holds keys 2 … 5.
		q, k, v := grader.Rand(30, 1, 1, 4, 4), grader.Rand(31, 1, 1, 6, 4), grader.Rand(32, 1, 1, 6, 3)
		bias, err := mhatest.CausalBias(mhatest.TopLeft, 1, 1, 4, 6, math.Inf(-1))
		if err != nil {
			t.Fatal(err)
		}
		check(t, q, k, v, 2, columns(bias, 0, 2), columns(bias, 2, 6), bias)
	})
}
