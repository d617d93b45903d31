//go:build lessons || solution

package flash

// The grader of lesson 8. `mhalab lessons check 8` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"math"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 8, Dir: "08_flash"}

// keys returns x[:, :, from:to, :] of x [B, h, L, d].
func keys(x *mhatest.Tensor, from, to int) *mhatest.Tensor {
	B, h, d := x.Shape[0], x.Shape[1], x.Shape[3]
	out := mhatest.New(B, h, to-from, d)
	for b := range B {
		for n := range h {
			for j := from; j < to; j++ {
				for c := range d {
					out.Set(x.At(b, n, j, c), b, n, j-from, c)
				}
			}
		}
	}
	return out
}

// flash runs NewState, Block for each block [from, to) of keys in the given order, and Finish.
func flash(t *testing.T, q, k, v *mhatest.Tensor, blocks [][2]int) (out, lse *mhatest.Tensor) {
	t.Helper()
	B, h, Lq, dk, dv := q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3], v.Shape[3]
	what := fmt.Sprintf("Block over the keys %v, then Finish (q %v, k %v, v %v)", blocks, q.Shape, k.Shape, v.Shape)
	inputs := []any{grader.F32(q)}
	for _, blk := range blocks {
		inputs = append(inputs, grader.F32(keys(k, blk[0], blk[1])), grader.F32(keys(v, blk[0], blk[1])))
	}
	res := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		s := NewState(g, B, h, Lq, dv)
		for i := range blocks {
			s = Block(s, in[0], in[1+2*i], in[2+2*i], 1/math.Sqrt(float64(dk)))
		}
		out, lse := Finish(s)
		return []*Node{out, lse}
	}, inputs...)
	var err error
	if out, err = grader.Host(res[0]); err != nil {
		lesson.Fatalf(t, "%s, out: %v", what, err)
	}
	if lse, err = grader.Host(res[1]); err != nil {
		lesson.Fatalf(t, "%s, lse: %v", what, err)
	}
	return out, lse
}

// check compares out and lse with mhatest's online softmax (which equals plain attention).
func check(t *testing.T, name string, q, k, v *mhatest.Tensor, blocks [][2]int) {
	t.Helper()
	out, lse := flash(t, q, k, v, blocks)
	wantOut, wantLSE := mhatest.OnlineSoftmaxAttention(q, k, v, nil, 0, k.Shape[2])
	lesson.CloseHost(t, name+": out vs softmax(q·kᵀ/√dk)·v", out, wantOut, 1e-5)
	lesson.CloseHost(t, name+": lse = log Σ_j exp(logit_j)", lse, wantLSE, 1e-5)
}

func TestLesson(t *testing.T) {
	t.Run("one block is plain attention", func(t *testing.T) {
		q, k, v := grader.Rand(1, 2, 2, 3, 4), grader.Rand(2, 2, 2, 5, 4), grader.Rand(3, 2, 2, 5, 6)
		check(t, "one block of 5 keys", q, k, v, [][2]int{{0, 5}})
	})
	t.Run("three blocks of two keys", func(t *testing.T) {
		q, k, v := grader.Rand(4, 2, 2, 3, 4), grader.Rand(5, 2, 2, 6, 4), grader.Rand(6, 2, 2, 6, 3)
		check(t, "blocks [0,2) [2,4) [4,6)", q, k, v, [][2]int{{0, 2}, {2, 4}, {4, 6}})
	})
	t.Run("uneven blocks", func(t *testing.T) {
		q, k, v := grader.Rand(7, 1, 2, 4, 4), grader.Rand(8, 1, 2, 7, 4), grader.Rand(9, 1, 2, 7, 4)
		check(t, "blocks [0,4) [4,7)", q, k, v, [][2]int{{0, 4}, {4, 7}})
	})
	t.Run("a later block raises the maximum", func(t *testing.T) {
		// The keys of the second block are 8 times larger: their logits exceed every logit of the
		// first block, so what was summed with the old maximum must be rescaled by α.
		q, k, v := grader.Scale(grader.Rand(10, 1, 1, 3, 4), 2), grader.Rand(11, 1, 1, 6, 4), grader.Rand(12, 1, 1, 6, 2)
		for i := 3 * 4; i < len(k.Data); i++ {
			k.Data[i] *= 8
		}
		check(t, "blocks [0,3) [3,6), larger logits in the second", q, k, v, [][2]int{{0, 3}, {3, 6}})
	})
	t.Run("block order does not matter", func(t *testing.T) {
		q, k, v := grader.Scale(grader.Rand(13, 1, 2, 3, 4), 3), grader.Rand(14, 1, 2, 6, 4), grader.Rand(15, 1, 2, 6, 4)
		check(t, "blocks [4,6) [2,4) [0,2), in reverse", q, k, v, [][2]int{{4, 6}, {2, 4}, {0, 2}})
	})
	t.Run("matches PyTorch one key at a time", func(t *testing.T) {
		// nn.MultiheadAttention(8, 2) (lessons/testdata/mha_weights_per_head.safetensors): the
		// grader projects and splits the heads, you fold the 4 keys in one at a time, the grader
		// merges the heads and applies out_proj.
		m := grader.LoadTorchMHA(t, "mha_weights_per_head")
		out, _ := flash(t, m.Q, m.K, m.V, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}})
		if !mhatest.SameShape(out.Shape, m.Q.Shape) {
			lesson.Fatalf(t, "out: expected shape %v, got %v", m.Q.Shape, out.Shape)
		}
		lesson.CloseHost(t, "out_proj(your output) vs PyTorch's attn_output", m.OutProj(out), m.Out, 1e-5)
	})
}
