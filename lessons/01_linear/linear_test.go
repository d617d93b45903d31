//go:build lessons || solution

package linear

// The grader of lesson 1. `mhalab lessons check 1` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 1, Dir: "01_linear"}

// linear runs the student's Linear on host tensors; a nil bias means "no bias".
func linear(t *testing.T, what string, x, w, b *mhatest.Tensor) *mhatest.Tensor {
	t.Helper()
	inputs := []any{grader.F32(x), grader.F32(w)}
	if b != nil {
		inputs = append(inputs, grader.F32(b))
	}
	out := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		var bias *Node
		if len(in) == 3 {
			bias = in[2]
		}
		return []*Node{Linear(in[0], in[1], bias)}
	}, inputs...)
	y, err := grader.Host(out[0])
	if err != nil {
		lesson.Fatalf(t, "%s: %v", what, err)
	}
	return y
}

func TestLesson(t *testing.T) {
	t.Run("output shape", func(t *testing.T) {
		x, w, b := grader.Rand(1, 2, 3, 5), grader.Rand(2, 4, 5), grader.Rand(3, 4)
		y := linear(t, "Linear(x [2 3 5], weight [4 5], bias [4])", x, w, b)
		if !mhatest.SameShape(y.Shape, []int{2, 3, 4}) {
			lesson.Failf(t, "Linear(x [2 3 5], weight [4 5], bias [4]): expected shape [2 3 4], got %v\n"+
				"  The weight is [out, in] = [4 5], so the last axis of y has 4 elements.", y.Shape)
		}
	})
	t.Run("values match the float64 reference", func(t *testing.T) {
		// Shapes drawn afresh for every grading run.
		B, L, in, out := grader.Dim(1, 1, 4), grader.Dim(2, 1, 6), grader.Dim(3, 1, 9), grader.Dim(4, 1, 9)
		x, w, b := grader.Rand(4, B, L, in), grader.Rand(5, out, in), grader.Rand(6, out)
		what := fmt.Sprintf("Linear(x %v, weight %v, bias %v)", x.Shape, w.Shape, b.Shape)
		y := linear(t, what, x, w, b)
		lesson.CloseHost(t, what, y, mhatest.Linear(x, w, b), 1e-5)
	})
	t.Run("square weight is used transposed", func(t *testing.T) {
		// With in = out a forgotten transpose still has the right shape: only values show it.
		x, w, b := grader.Rand(7, 2, 5), grader.Rand(8, 5, 5), grader.Rand(9, 5)
		y := linear(t, "Linear(x [2 5], weight [5 5], bias [5])", x, w, b)
		lesson.CloseHost(t, "Linear(x [2 5], weight [5 5], bias [5])", y, mhatest.Linear(x, w, b), 1e-5)
	})
	t.Run("no bias", func(t *testing.T) {
		x, w := grader.Rand(10, 3, 5), grader.Rand(11, 2, 5)
		y := linear(t, "Linear(x [3 5], weight [2 5], nil)", x, w, nil)
		lesson.CloseHost(t, "Linear(x [3 5], weight [2 5], nil)", y, mhatest.Linear(x, w, nil), 1e-5)
	})
	t.Run("rank 4 input", func(t *testing.T) {
		x, w, b := grader.Rand(12, 2, 2, 3, 5), grader.Rand(13, 4, 5), grader.Rand(14, 4)
		y := linear(t, "Linear(x [2 2 3 5], weight [4 5], bias [4])", x, w, b)
		lesson.CloseHost(t, "Linear(x [2 2 3 5], weight [4 5], bias [4])", y, mhatest.Linear(x, w, b), 1e-5)
	})
	t.Run("matches PyTorch nn.Linear", func(t *testing.T) {
		f := grader.LoadFixture(t, "linear") // nn.Linear(5, 4), lessons/testdata/gen.py
		x, w, b := f.Get(t, "input.x"), f.Get(t, "param.weight"), f.Get(t, "param.bias")
		y := linear(t, "Linear(x, weight, bias) on nn.Linear(5, 4)'s parameters", x, w, b)
		lesson.CloseHost(t, "Linear vs PyTorch nn.Linear(5, 4)", y, f.Get(t, "ref64.y"), 1e-5)
		y = linear(t, "Linear(x, weight, nil) on nn.Linear(5, 4)'s weight", x, w, nil)
		lesson.CloseHost(t, "Linear without bias vs PyTorch x @ weight.T", y, f.Get(t, "ref64.y_nobias"), 1e-5)
	})
}
