//go:build lessons || solution

package sdpa

// The grader of lesson 5. `mhalab lessons check 5` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"math"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 5, Dir: "05_sdpa"}

func attend(t *testing.T, q, k, v *mhatest.Tensor) (out, weights *mhatest.Tensor) {
	t.Helper()
	what := fmt.Sprintf("ScaledDotProductAttention(q %v, k %v, v %v)", q.Shape, k.Shape, v.Shape)
	res := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		out, weights := ScaledDotProductAttention(in[0], in[1], in[2])
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

// which names the scale a result was computed with, among the usual mistakes; "" if none fits.
func which(q, k, v, weights *mhatest.Tensor) string {
	dk, dv := float64(q.Shape[3]), float64(v.Shape[3])
	for _, c := range []struct {
		name  string
		scale float64
	}{{"no scale at all (1)", 1}, {"1/dk instead of 1/√dk", 1 / dk}, {"1/√dv instead of 1/√dk", 1 / math.Sqrt(dv)}, {"√dk instead of 1/√dk", math.Sqrt(dk)}} {
		if c.scale == 1/math.Sqrt(dk) {
			continue
		}
		_, w := mhatest.SDPA(q, k, v, nil, c.scale)
		if d, err := mhatest.MaxAbsDiff(w, weights); err == nil && d < 1e-5 {
			return c.name
		}
	}
	return ""
}

func TestLesson(t *testing.T) {
	t.Run("shapes", func(t *testing.T) {
		q, k, v := grader.Rand(1, 2, 3, 4, 8), grader.Rand(2, 2, 3, 6, 8), grader.Rand(3, 2, 3, 6, 5)
		out, weights := attend(t, q, k, v)
		if !mhatest.SameShape(out.Shape, []int{2, 3, 4, 5}) {
			lesson.Failf(t, "out: expected shape [2 3 4 5] ([B, h, Lq, dv]), got %v", out.Shape)
		}
		if !mhatest.SameShape(weights.Shape, []int{2, 3, 4, 6}) {
			lesson.Failf(t, "weights: expected shape [2 3 4 6] ([B, h, Lq, Lk]), got %v", weights.Shape)
		}
	})
	t.Run("weights rows sum to 1", func(t *testing.T) {
		q, k, v := grader.Rand(4, 1, 2, 3, 4), grader.Rand(5, 1, 2, 5, 4), grader.Rand(6, 1, 2, 5, 4)
		_, weights := attend(t, q, k, v)
		if !mhatest.SameShape(weights.Shape, []int{1, 2, 3, 5}) {
			lesson.Fatalf(t, "weights: expected shape [1 2 3 5], got %v", weights.Shape)
		}
		for row := 0; row < len(weights.Data)/5; row++ {
			sum := 0.0
			for _, w := range weights.Data[row*5 : row*5+5] {
				if w < 0 {
					lesson.Fatalf(t, "weights %v: a weight is negative (%.4g): a softmax gives values in [0, 1]", grader.Index(weights.Shape, row*5)[:3], w)
				}
				sum += w
			}
			if math.Abs(sum-1) > 1e-5 {
				lesson.Fatalf(t, "weights row %v sums to %.6g: the softmax must run over the keys (the last axis), so each row sums to 1", grader.Index(weights.Shape, row*5)[:3], sum)
			}
		}
	})
	t.Run("scale is 1 over sqrt dk", func(t *testing.T) {
		// dk = 16 and dv = 3: 1, 1/dk, 1/√dk and 1/√dv give clearly different weights.
		q, k, v := grader.Rand(7, 1, 2, 3, 16), grader.Rand(8, 1, 2, 4, 16), grader.Rand(9, 1, 2, 4, 3)
		q, k = grader.Scale(q, 2), grader.Scale(k, 2)
		_, weights := attend(t, q, k, v)
		_, want := mhatest.SDPA(q, k, v, nil, 0)
		if !lesson.CloseHost(t, "weights with dk = 16 vs the float64 reference", weights, want, 1e-5) {
			if mistake := which(q, k, v, weights); mistake != "" {
				lesson.Failf(t, "Your weights are those of %s.", mistake)
			}
		}
	})
	t.Run("values match the float64 reference", func(t *testing.T) {
		// Shapes drawn afresh for every grading run.
		B, h, Lq, Lk := grader.Dim(1, 1, 3), grader.Dim(2, 1, 4), grader.Dim(3, 1, 6), grader.Dim(4, 1, 7)
		dk, dv := grader.Dim(5, 1, 8), grader.Dim(6, 1, 8)
		q, k, v := grader.Rand(10, B, h, Lq, dk), grader.Rand(11, B, h, Lk, dk), grader.Rand(12, B, h, Lk, dv)
		out, weights := attend(t, q, k, v)
		wantOut, wantWeights := mhatest.SDPA(q, k, v, nil, 0)
		lesson.CloseHost(t, "weights vs mhatest.SDPA", weights, wantWeights, 1e-5)
		lesson.CloseHost(t, "out vs mhatest.SDPA", out, wantOut, 1e-5)
	})
	t.Run("large logits give no NaN", func(t *testing.T) {
		// Logits in the thousands: exp overflows float32 unless the row maximum is subtracted first.
		q, k, v := grader.Scale(grader.Rand(13, 1, 1, 3, 4), 60), grader.Scale(grader.Rand(14, 1, 1, 4, 4), 60), grader.Rand(15, 1, 1, 4, 2)
		out, weights := attend(t, q, k, v)
		wantOut, wantWeights := mhatest.SDPA(q, k, v, nil, 0)
		lesson.CloseHost(t, "weights with logits near ±1000", weights, wantWeights, 1e-4)
		lesson.CloseHost(t, "out with logits near ±1000", out, wantOut, 1e-4)
	})
	t.Run("matches PyTorch per-head weights", func(t *testing.T) {
		// nn.MultiheadAttention(8, 2) with average_attn_weights=False: the grader projects the
		// inputs and splits the heads, you attend; your weights must be PyTorch's, and your output
		// after out_proj must be PyTorch's (lessons/testdata/mha_weights_per_head.safetensors).
		m := grader.LoadTorchMHA(t, "mha_weights_per_head")
		out, weights := attend(t, m.Q, m.K, m.V)
		lesson.CloseHost(t, "weights vs PyTorch's attn_output_weights [B, h, Lq, Lk]", weights, m.Weights, 1e-5)
		if mhatest.SameShape(out.Shape, m.Q.Shape) {
			lesson.CloseHost(t, "out_proj(your output) vs PyTorch's attn_output", m.OutProj(out), m.Out, 1e-5)
		} else {
			lesson.Failf(t, "out: expected shape %v, got %v", m.Q.Shape, out.Shape)
		}
	})
}
