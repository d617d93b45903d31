//go:build lessons || solution

package rope

// The grader of lesson 12. `mhalab lessons check 12` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"math"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 12, Dir: "12_rope"}

func rotate(t *testing.T, x *mhatest.Tensor, theta float64, rd, offset int) *mhatest.Tensor {
	t.Helper()
	what := fmt.Sprintf("RoPE(x %v, theta %g, rotaryDims %d, offset %d)", x.Shape, theta, rd, offset)
	res := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		return []*Node{RoPE(in[0], theta, rd, offset)}
	}, grader.F32(x))
	out, err := grader.Host(res[0])
	if err != nil {
		lesson.Fatalf(t, "%s: %v", what, err)
	}
	return out
}

func TestLesson(t *testing.T) {
	t.Run("shape", func(t *testing.T) {
		x := grader.Rand(1, 2, 3, 4, 8)
		if out := rotate(t, x, 10000, 8, 0); !mhatest.SameShape(out.Shape, x.Shape) {
			lesson.Fatalf(t, "expected shape %v (the shape of x), got %v", x.Shape, out.Shape)
		}
	})
	t.Run("position 0 is not rotated", func(t *testing.T) {
		x := grader.Rand(2, 1, 1, 1, 8)
		lesson.CloseHost(t, "the row at position 0 (angle 0)", rotate(t, x, 10000, 8, 0), x, 1e-6)
	})
	for _, c := range []struct {
		name          string
		theta         float64
		rd, offset, d int
	}{{"all features, theta 10000", 10000, 8, 0, 8}, {"theta 500000 and offset 7", 500000, 8, 7, 8}, {"partial rotary 4 of 10 features", 10000, 4, 3, 10}} {
		t.Run(c.name, func(t *testing.T) {
			x := grader.Rand(3, 2, 2, 5, c.d)
			got := rotate(t, x, c.theta, c.rd, c.offset)
			want := mhatest.RoPE(x, mhatest.RoPESpec{Theta: c.theta, RotaryDims: c.rd, Offset: c.offset})
			if !lesson.CloseHost(t, "vs mhatest.RoPE (half-split)", got, want, 1e-5) {
				inter := mhatest.RoPE(x, mhatest.RoPESpec{Theta: c.theta, RotaryDims: c.rd, Offset: c.offset, Interleaved: true})
				if d, err := mhatest.MaxAbsDiff(got, inter); err == nil && d < 1e-5 {
					lesson.Failf(t, "You rotated pairs (2k, 2k+1): that is the interleaved (GPT-J / GGUF) convention; this lesson pairs k with k + rotaryDims/2 (Hugging Face's rotate_half).")
				}
			}
		})
	}
	t.Run("scores depend only on i - j", func(t *testing.T) {
		// q at position i, k at position j: after RoPE, q·k is the same for (i, j) and (i+100, j+100).
		q, k := grader.Rand(4, 1, 1, 1, 8), grader.Rand(5, 1, 1, 1, 8)
		dot := func(i, j int) float64 {
			a, b := rotate(t, q, 10000, 8, i), rotate(t, k, 10000, 8, j)
			s := 0.0
			for e := range a.Data {
				s += a.Data[e] * b.Data[e]
			}
			return s
		}
		if s0, s1 := dot(5, 2), dot(105, 102); math.Abs(s0-s1) > 1e-4 {
			lesson.Failf(t, "q·k at positions (5, 2) is %.6f but at (105, 102) %.6f: a rotation by p·ω then the inverse rotation by p'·ω depends only on p − p'", s0, s1)
		}
	})
	t.Run("matches Hugging Face rotate-half formula", func(t *testing.T) {
		// parity/modern_gen.py's rope_half (Hugging Face's rotate_half formula, torch float64):
		// x [2, 3, 5, 10], θ 100000, 8 rotary dims, offset 37.
		f := grader.LoadFixture(t, "modern_rope_half_100000_rd8_off37")
		lesson.CloseHost(t, "vs PyTorch (rotate_half)", rotate(t, f.Get(t, "x"), 100000, 8, 37), f.Get(t, "out64"), 1e-5)
	})
}
