//go:build lessons || solution

package uneven

// The grader of lesson 4. `mhalab lessons check 4` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"math"
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 4, Dir: "04_uneven_heads"}

// identity returns the [n, n] identity matrix.
func identity(n int) *mhatest.Tensor {
	x := mhatest.New(n, n)
	for i := range n {
		x.Set(1, i, i)
	}
	return x
}

// reference is multi-head attention over already projected q, k, v (identity projections, no
// biases) with the given head sizes; scale 0 means 1/√d_n per head.
func reference(t *testing.T, q, k, v *mhatest.Tensor, sizes []int, scale float64) *mhatest.Tensor {
	t.Helper()
	D := q.Shape[2]
	id := identity(D)
	p := mhatest.MHAParams{E: D, NumHeads: len(sizes), HeadSizes: sizes, Wq: id, Wk: id, Wv: id, Wo: id}
	out, _, err := mhatest.MHA(p, q, k, v, mhatest.MHAOptions{Scale: scale})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func attend(t *testing.T, q, k, v *mhatest.Tensor, sizes []int) *mhatest.Tensor {
	t.Helper()
	what := fmt.Sprintf("UnevenAttention(q %v, k %v, v %v, %v)", q.Shape, k.Shape, v.Shape, sizes)
	out := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		return []*Node{UnevenAttention(in[0], in[1], in[2], sizes)}
	}, grader.F32(q), grader.F32(k), grader.F32(v))
	y, err := grader.Host(out[0])
	if err != nil {
		lesson.Fatalf(t, "%s: %v", what, err)
	}
	return y
}

func TestLesson(t *testing.T) {
	t.Run("head sizes", func(t *testing.T) {
		for _, c := range []struct {
			dModel, headDim int
			want            []int
		}{
			{440, 100, []int{100, 100, 100, 100, 40}},
			{14, 4, []int{4, 4, 4, 2}},
			{12, 4, []int{4, 4, 4}},
			{5, 8, []int{5}},
			{7, 1, []int{1, 1, 1, 1, 1, 1, 1}},
		} {
			if got := grader.Call(lesson, t, fmt.Sprintf("HeadSizes(%d, %d)", c.dModel, c.headDim), func() []int { return HeadSizes(c.dModel, c.headDim) }); !slices.Equal(got, c.want) {
				lesson.Failf(t, "HeadSizes(%d, %d): expected %v, got %v", c.dModel, c.headDim, c.want, got)
			}
		}
	})
	t.Run("split shapes and values", func(t *testing.T) {
		sizes := []int{4, 4, 4, 2}
		x := mhatest.New(2, 3, 14)
		for i := range x.Data {
			x.Data[i] = float64(i) // a wrong element tells where it came from
		}
		what := "SplitUnevenHeads(x [2 3 14], [4 4 4 2])"
		out := lesson.RunList(t, what, func(g *Graph, in []*Node) []*Node {
			return SplitUnevenHeads(in[0], sizes)
		}, grader.F32(x))
		numHeads := len(out)
		if numHeads != len(sizes) {
			lesson.Fatalf(t, "%s: expected %d heads, got %d", what, len(sizes), numHeads)
		}
		offset := 0
		for n, d := range sizes {
			want := mhatest.New(2, 1, 3, d)
			for b := range 2 {
				for l := range 3 {
					for c := range d {
						want.Set(x.At(b, l, offset+c), b, 0, l, c)
					}
				}
			}
			lesson.Close(t, fmt.Sprintf("%s, head %d (columns %d to %d)", what, n, offset, offset+d-1), out[n], want, 0)
			offset += d
		}
	})
	t.Run("even heads", func(t *testing.T) {
		q, k, v := grader.Rand(1, 2, 3, 8), grader.Rand(2, 2, 5, 8), grader.Rand(3, 2, 5, 8)
		got := attend(t, q, k, v, []int{4, 4})
		lesson.CloseHost(t, "UnevenAttention with sizes [4 4] vs the float64 reference", got, reference(t, q, k, v, []int{4, 4}, 0), 1e-5)
	})
	t.Run("440 = 4x100 + 40, each head with its own scale", func(t *testing.T) {
		sizes := []int{100, 100, 100, 100, 40}
		q, k, v := grader.Rand(4, 1, 3, 440), grader.Rand(5, 1, 4, 440), grader.Rand(6, 1, 4, 440)
		q, k = grader.Scale(q, 2), grader.Scale(k, 2) // logits large enough for the scale to matter
		got := attend(t, q, k, v, sizes)
		want := reference(t, q, k, v, sizes, 0)
		if !lesson.CloseHost(t, "UnevenAttention(q, k, v [1 L 440], [100 100 100 100 40]) vs the float64 reference", got, want, 1e-4) {
			if d, err := mhatest.MaxAbsDiff(got, reference(t, q, k, v, sizes, 1/math.Sqrt(100))); err == nil && d < 1e-4 {
				lesson.Failf(t, "Your result equals attention with the scale 1/√100 in every head: the last head has 40 features and needs 1/√40.")
			}
		}
	})
	t.Run("matches PyTorch seed 001", func(t *testing.T) {
		// Seed 001's uneven self-attention in PyTorch: d = 14, head_dim = 4 → heads [4 4 4 2]
		// (lessons/testdata/seed001_small.safetensors). The grader projects the input, you attend,
		// the grader applies the output projection.
		m := grader.LoadTorchMHA(t, "seed001_small")
		merged := attend(t, m.QP, m.KP, m.VP, m.HeadSizes)
		if !mhatest.SameShape(merged.Shape, m.QP.Shape) {
			lesson.Fatalf(t, "UnevenAttention on seed 001's projections: expected shape %v, got %v", m.QP.Shape, merged.Shape)
		}
		out := mhatest.Linear(merged, m.Params.Wo, m.Params.Bo)
		lesson.CloseHost(t, "seed 001's output (your attention + out_proj) vs PyTorch", out, m.Out, 1e-4)
	})
}
