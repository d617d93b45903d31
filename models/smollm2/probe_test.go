package smollm2

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/models/probe"
)

// probeTol bounds |Δ log p| between two routes to the same numbers (the probe's graph with
// its float32 log-softmax over V = 49152, against Logits' logits and a float64 log-softmax;
// ablation against zeroed weights): measured 2.2e-4 (go, whose reductions sum in sequence)
// and 1.5e-5 (xla:cpu). Ablating three heads moves log p by 0.38, 400 times more.
const probeTol = 1e-3

func probeIDs(t *testing.T, m *Model) [][]int {
	t.Helper()
	return [][]int{
		m.Tokenizer.Encode("The cat sat on the mat because it was tired."),
		m.Tokenizer.Encode("When Mary and John went to the store, John gave a drink to"),
	}
}

// logSoftmax64 returns log softmax(row)[id] in float64.
func logSoftmax64(row []float32, id int) float64 {
	mx := math.Inf(-1)
	for _, v := range row {
		mx = max(mx, float64(v))
	}
	s := 0.0
	for _, v := range row {
		s += math.Exp(float64(v) - mx)
	}
	return float64(row[id]) - mx - math.Log(s)
}

// TestProbePlainEqualsLogits: without ablation, Probe's log-probabilities are the log-softmax
// of Runner.Logits (computed on the host, float64) at the next tokens, its attention weights
// are Runner.Attention's, and a padded batch gives each sequence what it gets alone.
func TestProbePlainEqualsLogits(t *testing.T) {
	m := testModel(t)
	ids := probeIDs(t, m)
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		r := testRunner(t, backend)
		out, err := r.Probe(ids, ProbeOptions{Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		worst, worstW := 0.0, 0.0
		for b, s := range ids {
			logits, weights, err := r.Attention(s)
			if err != nil {
				t.Fatal(err)
			}
			for p := range len(s) - 1 {
				worst = max(worst, math.Abs(float64(out.LogProbs[b][p])-logSoftmax64(logits[p], s[p+1])))
			}
			if !math.IsNaN(float64(out.LogProbs[b][len(s)-1])) {
				t.Errorf("sequence %d: the last position has no next token, want NaN, got %g", b, out.LogProbs[b][len(s)-1])
			}
			for _, l := range []int{0, 17, 29} {
				for h := range m.Config.NumAttentionHeads {
					for q := range len(s) {
						got := out.Attention[l].Row(b, h, q)
						for k := range len(s) {
							worstW = max(worstW, math.Abs(float64(got[k]-weights[l][h][q][k])))
						}
					}
				}
			}
		}
		t.Logf("max |Δ log p| %.2e, max |Δ weight| %.2e", worst, worstW)
		if worst > probeTol || worstW > probeTol {
			t.Errorf("probe differs from the model: max |Δ log p| %.3g, max |Δ weight| %.3g > %g", worst, worstW, probeTol)
		}
	})
}

// TestZeroAblationEqualsZeroedOutputColumns: zero-ablating heads gives the log-probabilities of
// the model whose o_proj weight has those heads' input columns set to zero.
func TestZeroAblationEqualsZeroedOutputColumns(t *testing.T) {
	m := testModel(t)
	ids := probeIDs(t, m)
	heads := []probe.Head{{Layer: 3, Head: 2}, {Layer: 3, Head: 7}, {Layer: 20, Head: 0}}
	zeroed := zeroOutputColumns(m, heads)
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		out, err := testRunner(t, backend).Probe(ids, ProbeOptions{Ablation: probe.Ablation{Heads: heads}})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := zeroed.NewRunner(backend)
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Finalize()
		plain, err := testRunner(t, backend).Probe(ids, ProbeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		worst, moved := 0.0, 0.0
		for b, s := range ids {
			logits, err := ref.Logits(s)
			if err != nil {
				t.Fatal(err)
			}
			for p := range len(s) - 1 {
				worst = max(worst, math.Abs(float64(out.LogProbs[b][p])-logSoftmax64(logits[p], s[p+1])))
				moved = max(moved, math.Abs(float64(out.LogProbs[b][p]-plain.LogProbs[b][p])))
			}
		}
		t.Logf("ablation %s: max |Δ log p| vs zeroed columns %.2e; it moved log p by up to %.3f", probe.Ablation{Heads: heads}, worst, moved)
		if worst > probeTol {
			t.Errorf("zero-ablation differs from zeroed o_proj columns: max |Δ log p| %.3g > %g", worst, probeTol)
		}
		if moved < 0.1 {
			t.Errorf("ablating %v moved log p by only %.3g: the ablation did nothing", heads, moved)
		}
	})
}

// zeroOutputColumns returns a copy of m whose o_proj weights [D, H·hd] have the columns of the
// given heads set to zero.
func zeroOutputColumns(m *Model, heads []probe.Head) *Model {
	w := &Weights{Tensors: map[string]*Tensor{}}
	for k, v := range m.Weights.Tensors {
		w.Tensors[k] = v
	}
	hd := m.Config.HeadDim
	for _, h := range heads {
		name := layerPath(h.Layer) + ".self_attn.o_proj.weight"
		old := w.Tensors[name]
		data := append([]float32(nil), old.Data...)
		cols := old.Shape[1]
		for row := range old.Shape[0] {
			clear(data[row*cols+h.Head*hd : row*cols+(h.Head+1)*hd])
		}
		w.Tensors[name] = &Tensor{Shape: old.Shape, Data: data}
	}
	out := *m
	out.Weights = w
	return &out
}

// TestHeadOutputsAndMeanAblation: a head's output in the trace equals Σ_k w[q, k]·v[k]
// computed on the host in float64 from the traced residual stream (RMSNorm, v_proj of its
// key/value head) and the traced weights; mean-ablating it replaces its output by its mean
// (probe.MeanHeads) at every position, and leaves the earlier layers untouched.
func TestHeadOutputsAndMeanAblation(t *testing.T) {
	m := testModel(t)
	ids := probeIDs(t, m)
	c := m.Config
	const layer, head = 5, 4
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		r := testRunner(t, backend)
		plain, err := r.Probe(ids, ProbeOptions{Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for b, s := range ids {
			v := valueRows64(m, plain.Residual[layer], b, len(s), layer, head/(c.NumAttentionHeads/c.NumKeyValueHeads))
			for q := range len(s) {
				w := plain.Attention[layer].Row(b, head, q)
				got := plain.Heads[layer].Row(b, head, q)
				for i := range c.HeadDim {
					want := 0.0
					for k := range len(s) {
						want += float64(w[k]) * v[k][i]
					}
					worst = max(worst, math.Abs(float64(got[i])-want))
				}
			}
		}
		t.Logf("head %d.%d output vs float64 from the traced residual: max |Δ| %.2e", layer, head, worst)
		if worst > 1e-4 {
			t.Errorf("head %d.%d output differs from Σ w·v recomputed on the host: max |Δ| %.3g > 1e-4", layer, head, worst)
		}
		means, err := probe.MeanHeads(plain.Trace, plain.Lengths, 1)
		if err != nil {
			t.Fatal(err)
		}
		abl := probe.Ablation{Heads: []probe.Head{{Layer: layer, Head: head}}, Mode: probe.Mean, Means: means}
		out, err := r.Probe(ids, ProbeOptions{Ablation: abl, Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		mean := means.At(probe.Head{Layer: layer, Head: head})
		for b, s := range ids {
			for q := range len(s) {
				for i, x := range out.Heads[layer].Row(b, head, q) {
					if x != mean[i] {
						t.Fatalf("mean-ablated head %d.%d at sequence %d position %d element %d: %g, want the mean %g", layer, head, b, q, i, x, mean[i])
					}
				}
			}
			for i, x := range out.Residual[layer].Row(b, len(s)-1) {
				if x != plain.Residual[layer].Row(b, len(s)-1)[i] {
					t.Fatalf("mean-ablating layer %d changed the residual stream entering it (sequence %d, element %d)", layer, b, i)
				}
			}
		}
	})
}

// valueRows64 recomputes v = RMSNorm(x)·input_layernorm · v_projᵀ of one key/value head in
// float64 from the residual stream x [B, L, D] entering layer: [n][hd].
func valueRows64(m *Model, x probe.Array, b, n, layer, kvHead int) [][]float64 {
	c := m.Config
	D, hd := c.HiddenSize, c.HeadDim
	norm := m.Weights.Tensors[layerPath(layer)+".input_layernorm.weight"].Data
	wv := m.Weights.Tensors[layerPath(layer)+".self_attn.v_proj.weight"].Data // [Hkv·hd, D]
	rows := make([][]float64, n)
	for p := range n {
		row := x.Row(b, p)
		ss := 0.0
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(D)+c.RMSNormEps)
		rows[p] = make([]float64, hd)
		for i := range hd {
			w := wv[(kvHead*hd+i)*D : (kvHead*hd+i+1)*D]
			for j, v := range row {
				rows[p][i] += float64(v) * inv * float64(norm[j]) * float64(w[j])
			}
		}
	}
	return rows
}
