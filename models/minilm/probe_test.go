package minilm

import (
	"fmt"
	"math"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/models/probe"
)

// probeSentences: two lengths, so that the batch is padded.
var probeSentences = []string{"The cat sat on the mat because it was tired.", "The dog chased the ball."}

// probeTol bounds |Δ| per embedding component between two routes to the same numbers
// (the probe's attention against mhalib's, ablation against edited weights): measured ≤ 2e-7
// on both backends; ablating two heads moves components by ~1e-2.
const probeTol = 2e-6

// TestProbePlainEqualsRun: without ablation Probe gives Run's embeddings, hidden states and
// attention weights, although it computes the attention head by head (probeAttention).
func TestProbePlainEqualsRun(t *testing.T) {
	m := testModel(t)
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		encs, _, err := m.Encode(probeSentences, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Probe(backend, encs, ProbeOptions{Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.Run(backend, encs, true)
		if err != nil {
			t.Fatal(err)
		}
		defer want.Finalize()
		worst := 0.0
		for b := range encs {
			worst = max(worst, maxDiff32(got.Embeddings[b], want.Embeddings[b]))
		}
		for l, h := range want.Hidden {
			worst = max(worst, maxDiff32(got.Residual[l].Data, tensors.MustCopyFlatData[float32](h)))
		}
		for l, a := range want.Attentions {
			worst = max(worst, maxDiff32(got.Attention[l].Data, tensors.MustCopyFlatData[float32](a)))
		}
		t.Logf("probe vs Run: max |Δ| %.2e", worst)
		if worst > 1e-5 {
			t.Errorf("Probe without ablation differs from Run: max |Δ| %.3g > 1e-5", worst)
		}
	})
}

// TestAblationEqualsEditedWeights: zero-ablating heads equals zeroing their input columns of
// the output projection (attention.output.dense.weight [E, E]); mean-ablating them equals
// zeroing those columns and adding W_o[:, cols]·mean (computed in float64 on the host from the
// traced head outputs) to the projection's bias.
func TestAblationEqualsEditedWeights(t *testing.T) {
	m := testModel(t)
	heads := []probe.Head{{Layer: 1, Head: 3}, {Layer: 4, Head: 11}}
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		encs, _, err := m.Encode(probeSentences, 0)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := m.Probe(backend, encs, ProbeOptions{Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		means, err := probe.MeanHeads(plain.Trace, plain.Lengths, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []probe.Mode{probe.Zero, probe.Mean} {
			abl := probe.Ablation{Heads: heads, Mode: mode, Means: means}
			got, err := m.Probe(backend, encs, ProbeOptions{Ablation: abl})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := m.withEditedOutput(heads, mode, plain)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Run(backend, encs, false)
			if err != nil {
				t.Fatal(err)
			}
			worst, moved := 0.0, 0.0
			for b := range encs {
				worst = max(worst, maxDiff32(got.Embeddings[b], want.Embeddings[b]))
				moved = max(moved, maxDiff32(got.Embeddings[b], plain.Embeddings[b]))
			}
			t.Logf("%s: max |Δ| vs edited weights %.2e; the ablation moved components by up to %.2e", abl, worst, moved)
			if worst > probeTol {
				t.Errorf("%s differs from edited weights: max |Δ| %.3g > %g", abl, worst, probeTol)
			}
			if moved < 100*probeTol {
				t.Errorf("%s moved the embeddings by only %.3g: the ablation did nothing", abl, moved)
			}
		}
	})
}

// withEditedOutput returns a copy of m whose output projections have the heads' columns
// zeroed and, for mean-ablation, bias += W_o[:, cols]·mean, the mean of the head's output over
// every valid position of the traced batch, computed here in float64.
func (m *Model) withEditedOutput(heads []probe.Head, mode probe.Mode, tr *ProbeOutput) (*Model, error) {
	E, dk := m.Config.HiddenSize, m.Config.HiddenSize/m.Config.NumAttentionHeads
	w := make(map[string]*tensors.Tensor, len(m.weights))
	for k, v := range m.weights {
		w[k] = v
	}
	for _, h := range heads {
		p := fmt.Sprintf("encoder.layer.%d.attention.output.dense.", h.Layer)
		weight := tensors.MustCopyFlatData[float32](w[p+"weight"]) // [E, E]
		bias := tensors.MustCopyFlatData[float32](w[p+"bias"])     // [E]
		mean := make([]float64, dk)
		n := 0
		for b, length := range tr.Lengths {
			for pos := range length {
				for i, v := range tr.Heads[h.Layer].Row(b, h.Head, pos) {
					mean[i] += float64(v)
				}
				n++
			}
		}
		for row := range E {
			cols := weight[row*E+h.Head*dk : row*E+(h.Head+1)*dk]
			if mode == probe.Mean {
				s := float64(bias[row])
				for i, c := range cols {
					s += float64(c) * mean[i] / float64(n)
				}
				bias[row] = float32(s)
			}
			clear(cols)
		}
		w[p+"weight"] = tensors.FromFlatDataAndDimensions(weight, E, E)
		w[p+"bias"] = tensors.FromFlatDataAndDimensions(bias, E)
	}
	out := *m
	out.weights, out.ctxs, out.execs, out.probes = w, map[backends.Backend]*context.Context{}, map[execKey]*context.Exec{}, nil
	return &out, nil
}

// TestHeadOutputsFromResidual: a traced head's output equals Σ_k w[q, k]·v[k], with
// v = x·W_vᵀ + b_v computed in float64 from the traced residual stream x entering the layer.
func TestHeadOutputsFromResidual(t *testing.T) {
	m := testModel(t)
	const layer, head = 2, 5
	E, dk := m.Config.HiddenSize, m.Config.HiddenSize/m.Config.NumAttentionHeads
	p := fmt.Sprintf("encoder.layer.%d.attention.self.value.", layer)
	wv := tensors.MustCopyFlatData[float32](m.weights[p+"weight"]) // [E, E]
	bv := tensors.MustCopyFlatData[float32](m.weights[p+"bias"])   // [E]
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		encs, _, err := m.Encode(probeSentences, 0)
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Probe(backend, encs, ProbeOptions{Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for b, n := range out.Lengths {
			v := make([][]float64, n)
			for pos := range n {
				x := out.Residual[layer].Row(b, pos)
				v[pos] = make([]float64, dk)
				for i := range dk {
					r := head*dk + i
					s := float64(bv[r])
					for j := range E {
						s += float64(x[j]) * float64(wv[r*E+j])
					}
					v[pos][i] = s
				}
			}
			for q := range n {
				w := out.Attention[layer].Row(b, head, q)
				for i, got := range out.Heads[layer].Row(b, head, q) {
					want := 0.0
					for k := range n {
						want += float64(w[k]) * v[k][i]
					}
					worst = max(worst, math.Abs(float64(got)-want))
				}
			}
		}
		t.Logf("head %d.%d output vs float64 from the traced residual: max |Δ| %.2e", layer, head, worst)
		if worst > 1e-4 {
			t.Errorf("head %d.%d output differs from Σ w·v recomputed on the host: max |Δ| %.3g > 1e-4", layer, head, worst)
		}
	})
}
