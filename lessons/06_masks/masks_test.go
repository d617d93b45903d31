//go:build lessons || solution

package masks

// The grader of lesson 6. `mhalab lessons check 6` restores this file from the original before
// it runs, so editing it cannot pass the exercise.

import (
	"fmt"
	"math"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/lessons/internal/grader"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

var lesson = grader.Lesson{Number: 6, Dir: "06_masks"}

var negInf = math.Inf(-1)

// padding is a [2, 5] key padding mask: batch 0 pads its last two keys, batch 1 its first one.
var padding = []bool{false, false, false, true, true, true, false, false, false, false}

// bias runs the student's AttentionBias; keyPadding nil means none.
func bias(t *testing.T, B, Lq, Lk int, causal bool, keyPadding []bool) *mhatest.Tensor {
	t.Helper()
	what := fmt.Sprintf("AttentionBias(g, B=%d, Lq=%d, Lk=%d, causal=%v, keyPadding=%s)", B, Lq, Lk, causal, describe(keyPadding, B, Lk))
	var inputs []any
	if keyPadding != nil {
		inputs = append(inputs, tensors.FromFlatDataAndDimensions(keyPadding, B, Lk))
	}
	out := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		var kp *Node
		if len(in) > 0 {
			kp = in[0]
		}
		return []*Node{AttentionBias(g, B, Lq, Lk, causal, kp)}
	}, inputs...)
	y, err := grader.Host(out[0])
	if err != nil {
		lesson.Fatalf(t, "%s: %v", what, err)
	}
	return y
}

func describe(keyPadding []bool, B, Lk int) string {
	if keyPadding == nil {
		return "nil"
	}
	return fmt.Sprintf("[%d %d] bool", B, Lk)
}

// wantBias is the reference: mhatest's bias for one head, [B, 1, Lq, Lk].
func wantBias(t *testing.T, B, Lq, Lk int, causal bool, keyPadding []bool) *mhatest.Tensor {
	t.Helper()
	spec := mhatest.MaskSpec{}
	if causal {
		spec.Causal = mhatest.TopLeft
	}
	if keyPadding != nil {
		spec.KeyPaddingMask = mhatest.NewBoolMask(mhatest.BlockedWhereTrue, keyPadding, B, Lk)
	}
	b, err := spec.Bias(B, 1, Lq, Lk)
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		b = mhatest.New(B, 1, Lq, Lk)
	}
	return b
}

// softmaxRef is the masked softmax on the host: a row of −Inf gives zeros.
func softmaxRef(logits, bias *mhatest.Tensor) *mhatest.Tensor {
	B, h, Lq, Lk := logits.Shape[0], logits.Shape[1], logits.Shape[2], logits.Shape[3]
	out := mhatest.New(B, h, Lq, Lk)
	for b := range B {
		for n := range h {
			for i := range Lq {
				row, rowMax := make([]float64, Lk), negInf
				for j := range Lk {
					row[j] = logits.At(b, n, i, j) + bias.At(b, 0, i, j)
					rowMax = math.Max(rowMax, row[j])
				}
				if math.IsInf(rowMax, -1) {
					continue
				}
				sum := 0.0
				for j := range Lk {
					row[j] = math.Exp(row[j] - rowMax)
					sum += row[j]
				}
				for j := range Lk {
					out.Set(row[j]/sum, b, n, i, j)
				}
			}
		}
	}
	return out
}

// softmax runs AttentionBias and SafeSoftmax together on logits [B, h, Lq, Lk].
func softmax(t *testing.T, logits *mhatest.Tensor, causal bool, keyPadding []bool) *mhatest.Tensor {
	t.Helper()
	B, Lq, Lk := logits.Shape[0], logits.Shape[2], logits.Shape[3]
	what := fmt.Sprintf("SafeSoftmax(logits %v, AttentionBias(g, %d, %d, %d, causal=%v, keyPadding=%s))", logits.Shape, B, Lq, Lk, causal, describe(keyPadding, B, Lk))
	inputs := []any{grader.F32(logits)}
	if keyPadding != nil {
		inputs = append(inputs, tensors.FromFlatDataAndDimensions(keyPadding, B, Lk))
	}
	out := lesson.Run(t, what, func(g *Graph, in []*Node) []*Node {
		var kp *Node
		if len(in) > 1 {
			kp = in[1]
		}
		return []*Node{SafeSoftmax(in[0], AttentionBias(g, B, Lq, Lk, causal, kp))}
	}, inputs...)
	y, err := grader.Host(out[0])
	if err != nil {
		lesson.Fatalf(t, "%s: %v", what, err)
	}
	return y
}

// logitsOf returns q·kᵀ/√dk per head: [B, h, Lq, Lk].
func logitsOf(q, k *mhatest.Tensor) *mhatest.Tensor {
	B, h, Lq, dk, Lk := q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3], k.Shape[2]
	out := mhatest.New(B, h, Lq, Lk)
	for b := range B {
		for n := range h {
			for i := range Lq {
				for j := range Lk {
					dot := 0.0
					for d := range dk {
						dot += q.At(b, n, i, d) * k.At(b, n, j, d)
					}
					out.Set(dot/math.Sqrt(float64(dk)), b, n, i, j)
				}
			}
		}
	}
	return out
}

func TestLesson(t *testing.T) {
	t.Run("causal bias", func(t *testing.T) {
		// Lq = 3 < Lk = 5: top-left causal, query i sees keys 0…i.
		got := bias(t, 2, 3, 5, true, nil)
		lesson.CloseHost(t, "causal bias [B 1 Lq Lk] (0 = may attend, −Inf = may not; query i sees keys j ≤ i)", got, wantBias(t, 2, 3, 5, true, nil), 0)
	})
	t.Run("key padding bias", func(t *testing.T) {
		got := bias(t, 2, 3, 5, false, padding)
		lesson.CloseHost(t, "key padding bias (true in key_padding_mask = padding = −Inf for every query)", got, wantBias(t, 2, 3, 5, false, padding), 0)
	})
	t.Run("causal and key padding together", func(t *testing.T) {
		got := bias(t, 2, 4, 5, true, padding)
		lesson.CloseHost(t, "causal + key padding bias", got, wantBias(t, 2, 4, 5, true, padding), 0)
	})
	t.Run("no mask is all zeros", func(t *testing.T) {
		got := bias(t, 2, 3, 4, false, nil)
		lesson.CloseHost(t, "bias without any mask", got, mhatest.New(2, 1, 3, 4), 0)
	})
	t.Run("masked softmax", func(t *testing.T) {
		logits := grader.Scale(grader.Rand(1, 2, 2, 4, 5), 3)
		got := softmax(t, logits, true, padding)
		lesson.CloseHost(t, "masked softmax vs the float64 reference", got, softmaxRef(logits, wantBias(t, 2, 4, 5, true, padding)), 1e-5)
	})
	t.Run("fully masked rows give 0, not NaN", func(t *testing.T) {
		// Batch 1 pads every key: each of its rows is fully masked and must be all zeros.
		all := []bool{false, true, false, false, true, true, true, true}
		logits := grader.Rand(2, 2, 2, 3, 4)
		got := softmax(t, logits, false, all)
		lesson.CloseHost(t, "masked softmax with every key of batch 1 padded (rows of batch 1 must be 0)", got, softmaxRef(logits, wantBias(t, 2, 3, 4, false, all)), 1e-5)
	})
	t.Run("matches PyTorch key padding mask", func(t *testing.T) {
		// nn.MultiheadAttention(8, 2) with a bool key_padding_mask [2 5]; PyTorch averaged the
		// weights over the heads (lessons/testdata/mha_kpm_bool.safetensors).
		m := grader.LoadTorchMHA(t, "mha_kpm_bool")
		kp, _ := m.Fixture.Bool(t, "input.key_padding_mask")
		got := softmax(t, logitsOf(m.Q, m.K), false, kp)
		if mhatest.SameShape(got.Shape, []int{m.B, m.H, m.Lq, m.Lk}) {
			lesson.CloseHost(t, "your weights averaged over the heads vs PyTorch's attn_output_weights", grader.AverageHeads(got), m.Weights, 1e-5)
		} else {
			lesson.Failf(t, "masked softmax: expected shape %v, got %v", []int{m.B, m.H, m.Lq, m.Lk}, got.Shape)
		}
	})
	t.Run("matches PyTorch causal attention mask", func(t *testing.T) {
		// nn.MultiheadAttention(8, 2) with the causal bool attn_mask triu(ones(4, 4), 1)
		// (lessons/testdata/mha_causal_bool.safetensors).
		m := grader.LoadTorchMHA(t, "mha_causal_bool")
		got := softmax(t, logitsOf(m.Q, m.K), true, nil)
		if mhatest.SameShape(got.Shape, []int{m.B, m.H, m.Lq, m.Lk}) {
			lesson.CloseHost(t, "your causal weights averaged over the heads vs PyTorch's attn_output_weights", grader.AverageHeads(got), m.Weights, 1e-5)
		} else {
			lesson.Failf(t, "masked softmax: expected shape %v, got %v", []int{m.B, m.H, m.Lq, m.Lk}, got.Shape)
		}
	})
}
