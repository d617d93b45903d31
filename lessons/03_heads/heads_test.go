//go:build lessons || solution

package heads

// The grader of lesson 3. `mhalab lessons check 3` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 3, Dir: "03_heads"}

// iota returns a tensor whose element i is i: a wrong element names where it came from.
func iota(shape ...int) *mhatest.Tensor {
	x := mhatest.New(shape...)
	for i := range x.Data {
		x.Data[i] = float64(i)
	}
	return x
}

func split(t *testing.T, x *mhatest.Tensor, h int) *mhatest.Tensor {
	t.Helper()
	what := fmt.Sprintf("SplitHeads(x %v, %d)", x.Shape, h)
	out := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node { return []*Node{SplitHeads(in[0], h)} }, grader.F32(x))
	y, err := grader.Host(out[0])
	if err != nil {
		lesson.Fatalf(t, "%s: %v", what, err)
	}
	return y
}

func merge(t *testing.T, x *mhatest.Tensor) *mhatest.Tensor {
	t.Helper()
	what := fmt.Sprintf("MergeHeads(x %v)", x.Shape)
	out := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node { return []*Node{MergeHeads(in[0])} }, grader.F32(x))
	y, err := grader.Host(out[0])
	if err != nil {
		lesson.Fatalf(t, "%s: %v", what, err)
	}
	return y
}

func TestLesson(t *testing.T) {
	t.Run("split shape", func(t *testing.T) {
		y := split(t, iota(2, 3, 8), 4)
		if !mhatest.SameShape(y.Shape, []int{2, 4, 3, 2}) {
			lesson.Failf(t, "SplitHeads(x [2 3 8], 4): expected shape [2 4 3 2] ([B, h, L, D/h]), got %v", y.Shape)
		}
	})
	t.Run("split values", func(t *testing.T) {
		// x[i] = i, so a wrong value tells which element landed there.
		x := iota(2, 3, 8)
		lesson.CloseHost(t, "SplitHeads(x [2 3 8], 4), with x holding 0, 1, 2, … in row-major order", split(t, x, 4), grader.SplitHeadsHost(x, 4), 0)
	})
	t.Run("merge shape", func(t *testing.T) {
		y := merge(t, iota(2, 4, 3, 2))
		if !mhatest.SameShape(y.Shape, []int{2, 3, 8}) {
			lesson.Failf(t, "MergeHeads(x [2 4 3 2]): expected shape [2 3 8] ([B, L, h·dk]), got %v", y.Shape)
		}
	})
	t.Run("merge values", func(t *testing.T) {
		x := iota(2, 4, 3, 2)
		lesson.CloseHost(t, "MergeHeads(x [2 4 3 2]), with x holding 0, 1, 2, … in row-major order", merge(t, x), grader.MergeHeadsHost(x), 0)
	})
	t.Run("merge undoes split", func(t *testing.T) {
		// The head width and the other sizes are drawn afresh for every grading run.
		dk := grader.Dim(1, 1, 5)
		for _, h := range []int{1, 2, 3, 6} {
			x := grader.Rand(uint64(h), grader.Dim(2, 1, 3), grader.Dim(3, 1, 6), h*dk)
			what := fmt.Sprintf("MergeHeads(SplitHeads(x %v, %d))", x.Shape, h)
			out := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node { return []*Node{MergeHeads(SplitHeads(in[0], h))} }, grader.F32(x))
			lesson.Close(t, what+" should give x back", out[0], x, 0)
		}
	})
	t.Run("heads match PyTorch", func(t *testing.T) {
		// nn.MultiheadAttention(8, 2) returned its per-head attention weights [B, h, Lq, Lk]
		// (lessons/testdata/mha_weights_per_head). Your heads of the projected query and key
		// must give the same weights: softmax(q_n·k_nᵀ/√dk) for each head n.
		m := grader.LoadTorchMHA(t, "mha_weights_per_head")
		q, k := split(t, m.QP, m.H), split(t, m.KP, m.H)
		if !mhatest.SameShape(q.Shape, m.Q.Shape) || !mhatest.SameShape(k.Shape, m.K.Shape) {
			lesson.Fatalf(t, "SplitHeads of the projected query [2 4 8] and key [2 4 8] into 2 heads: expected shapes %v and %v, got %v and %v", m.Q.Shape, m.K.Shape, q.Shape, k.Shape)
		}
		_, weights := mhatest.SDPA(q, k, k, nil, 0)
		lesson.CloseHost(t, "attention weights per head from your heads vs PyTorch's attn_output_weights", weights, m.Weights, 1e-5)
	})
}
