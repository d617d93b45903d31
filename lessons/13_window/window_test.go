//go:build lessons || solution

package window

// The grader of lesson 13. `mhalab lessons check 13` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 13, Dir: "13_window"}

func attend(t *testing.T, q, k, v *mhatest.Tensor, window int) (out, weights *mhatest.Tensor) {
	t.Helper()
	what := fmt.Sprintf("SlidingWindowAttention(q %v, k %v, v %v, window %d)", q.Shape, k.Shape, v.Shape, window)
	res := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		out, weights := SlidingWindowAttention(in[0], in[1], in[2], window)
		return []*Node{out, weights}
	}, grader.F32(q), grader.F32(k), grader.F32(v))
	out, err := grader.Host(res[0])
	if err != nil {
		lesson.Fatalf(t, "%s, out: %v", what, err)
	}
	weights, err = grader.Host(res[1])
	if err != nil {
		lesson.Fatalf(t, "%s, weights: %v", what, err)
	}
	return out, weights
}

func reference(q, k, v *mhatest.Tensor, window int) (out, weights *mhatest.Tensor) {
	return mhatest.Attention(q, k, v, mhatest.AttentionSpec{Causal: mhatest.TopLeft, Window: &mhatest.Window{Left: window, Right: -1}})
}

func TestLesson(t *testing.T) {
	t.Run("shapes", func(t *testing.T) {
		q, k, v := grader.Rand(1, 2, 3, 6, 4), grader.Rand(2, 2, 3, 6, 4), grader.Rand(3, 2, 3, 6, 5)
		out, weights := attend(t, q, k, v, 2)
		if !mhatest.SameShape(out.Shape, []int{2, 3, 6, 5}) || !mhatest.SameShape(weights.Shape, []int{2, 3, 6, 6}) {
			lesson.Fatalf(t, "expected out [2 3 6 5] and weights [2 3 6 6], got %v and %v", out.Shape, weights.Shape)
		}
	})
	for _, window := range []int{2, 0, 10} {
		t.Run(fmt.Sprintf("window %d", window), func(t *testing.T) {
			q, k, v := grader.Rand(10, 1, 2, 7, 4), grader.Rand(11, 1, 2, 7, 4), grader.Rand(12, 1, 2, 7, 3)
			out, weights := attend(t, q, k, v, window)
			wantOut, wantWeights := reference(q, k, v, window)
			if !lesson.CloseHost(t, "weights vs mhatest.Attention (causal, window)", weights, wantWeights, 1e-5) {
				for _, off := range []int{-1, 1} {
					if window+off < 0 {
						continue
					}
					_, w := reference(q, k, v, window+off)
					if d, err := mhatest.MaxAbsDiff(weights, w); err == nil && d < 1e-5 {
						lesson.Failf(t, "Your weights are those of a window of %d: query i sees the %d keys i − %d … i (both ends included).", window+off, window+1, window)
					}
				}
				_, causal := mhatest.Attention(q, k, v, mhatest.AttentionSpec{Causal: mhatest.TopLeft})
				if d, err := mhatest.MaxAbsDiff(weights, causal); err == nil && d < 1e-5 && window < 6 {
					lesson.Failf(t, "Your weights are plain causal attention: the window also hides the keys before i − %d.", window)
				}
			}
			lesson.CloseHost(t, "out vs mhatest.Attention", out, wantOut, 1e-5)
		})
	}
	t.Run("matches PyTorch", func(t *testing.T) {
		// parity/modern_gen.py's case "window": query i sees keys i−2 … i, L 8, 2 heads,
		// through torch.nn.attention.flex_attention with a block mask (float64).
		f := grader.LoadFixture(t, "modern_window")
		out, _ := attend(t, f.Get(t, "query"), f.Get(t, "key"), f.Get(t, "value"), 2)
		lesson.CloseHost(t, "out vs PyTorch flex_attention", out, f.Get(t, "out64"), 1e-5)
	})
}
