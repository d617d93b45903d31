package minilm

import (
	"fmt"
	"math"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/parity"
)

// embedTol bounds |mhalab − ref64| per component of a unit-norm sentence embedding. Averaging
// over the tokens and dividing by the norm shrinks the hidden states' errors: measured 1.1e-7
// (go) and 1.8e-7 (xla:cpu) at most; 1e-6 leaves a factor 5. A wrong pooling ([CLS] only,
// padding included) moves components by ~1e-2.
const embedTol = 1e-6

// TestEmbeddingsMatchSentenceTransformers: sentence embeddings of a padded batch (lengths 8 to
// 256 tokens, the last one truncated from 301) equal sentence-transformers' pipeline, and the
// published similarities hold: cos("A man is eating food.", "A man is eating a piece of
// bread.") = 0.7553 and −0.1050 against "The girl is carrying a baby.".
func TestEmbeddingsMatchSentenceTransformers(t *testing.T) {
	m := testModel(t)
	ref := readReference(t)
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		encs, dropped, err := m.Encode(ref.embed, DefaultMaxTokens)
		if err != nil {
			t.Fatal(err)
		}
		for j, e := range encs {
			if e.Len() != ref.embedLen[j] {
				t.Fatalf("sentence %d: %d tokens (%d dropped), transformers had %d", j, e.Len(), dropped[j], ref.embedLen[j])
			}
		}
		if dropped[len(dropped)-1] == 0 {
			t.Fatalf("the last sentence should have been truncated to %d tokens", DefaultMaxTokens)
		}
		embs, err := m.Embed(backend, encs, 4) // batches [256], [13 13 11 10], [9 9 8 8]
		if err != nil {
			t.Fatal(err)
		}
		for j, e := range embs {
			want := ref.floats(t, fmt.Sprintf("emb.%d", j))
			d, at := maxAbsDiff(e, want)
			t.Logf("sentence %d (L=%d): max |Δ| %.2e", j, encs[j].Len(), d)
			if d > embedTol {
				t.Errorf("sentence %d %.40q: max |Δ| %.3g at %d (got %g, want %g) > %g", j, ref.embed[j], d, at, e[at], want[at], embedTol)
			}
		}
		// The cosines: mhalab's against the float64 reference's, within the error model's bound
		// (parity.CosineBound: the components' errors, ≤ embedTol as just checked, carried through
		// the dot products of length 384, plus float32 accumulation); the reference's against the
		// published values, which have 4 decimals (±0.5e-4 of rounding).
		for _, c := range []struct {
			a, b      int
			published float64
		}{{0, 1, 0.7553}, {0, 2, -0.1050}} {
			got := Cosine(embs[c.a], embs[c.b])
			a, b := ref.floats(t, fmt.Sprintf("emb.%d", c.a)), ref.floats(t, fmt.Sprintf("emb.%d", c.b))
			want := cosine64(a, b)
			bound := parity.CosineBound(a, b, fill(len(a), embedTol), fill(len(b), embedTol))
			t.Logf("cos(%q, %q) = %.6f, reference %.6f, |Δ| %.2e ≤ bound %.2e", ref.embed[c.a], ref.embed[c.b], got, want,
				math.Abs(got-want), bound)
			if math.Abs(got-want) > bound {
				t.Errorf("cos(%q, %q) = %.6f, reference %.6f: |Δ| %.3g > bound %.3g", ref.embed[c.a], ref.embed[c.b], got, want,
					math.Abs(got-want), bound)
			}
			if math.Abs(want-c.published) > 0.5e-4 {
				t.Errorf("the reference's cos(%d, %d) = %.6f is not sentence-transformers' published %.4f", c.a, c.b, want, c.published)
			}
		}
	})
}

// TestPaddedBatchEqualsOneByOne: a batch padded to its longest sentence gives, for each
// sentence, the embedding, hidden states (on its own positions) and attention weights (on its
// own keys, zero on the padding) that the sentence gets alone.
func TestPaddedBatchEqualsOneByOne(t *testing.T) {
	m := testModel(t)
	sentences := []string{"Hi.", "The cat sat on the mat because it was tired.", "A much longer sentence, with commas, numbers like 12,345 and café, to make the others need padding."}
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		encs, _, err := m.Encode(sentences, 0)
		if err != nil {
			t.Fatal(err)
		}
		batch, err := m.Run(backend, encs, true)
		if err != nil {
			t.Fatal(err)
		}
		defer batch.Finalize()
		Lmax := batch.Hidden[0].Shape().Dim(1)
		E, h := m.Config.HiddenSize, m.Config.NumAttentionHeads
		worst := 0.0
		for b, enc := range encs {
			alone, err := m.Run(backend, []Encoding{enc}, true)
			if err != nil {
				t.Fatal(err)
			}
			L := enc.Len()
			worst = max(worst, maxDiff32(batch.Embeddings[b], alone.Embeddings[0]))
			for l := range batch.Hidden {
				bh := tensors.MustCopyFlatData[float32](batch.Hidden[l]) // [B, Lmax, E]
				ah := tensors.MustCopyFlatData[float32](alone.Hidden[l]) // [1, L, E]
				worst = max(worst, maxDiff32(bh[b*Lmax*E:b*Lmax*E+L*E], ah))
			}
			for l := range batch.Attentions {
				ba := tensors.MustCopyFlatData[float32](batch.Attentions[l]) // [B, h, Lmax, Lmax]
				aa := tensors.MustCopyFlatData[float32](alone.Attentions[l]) // [1, h, L, L]
				for hd := range h {
					for q := range L {
						row := ba[((b*h+hd)*Lmax+q)*Lmax:][:Lmax]
						worst = max(worst, maxDiff32(row[:L], aa[(hd*L+q)*L:][:L]))
						for k := L; k < Lmax; k++ {
							if row[k] != 0 {
								t.Fatalf("sentence %d layer %d head %d query %d: weight %g on padded key %d", b, l, hd, q, row[k], k)
							}
						}
					}
				}
			}
			alone.Finalize()
		}
		// Same arithmetic on different shapes: only the summation order of a few reductions
		// may differ, a few float32 ulps of values of order 1-10.
		t.Logf("max |batch − alone| = %.2e", worst)
		if worst > 1e-5 {
			t.Errorf("padded batch differs from one-by-one by %.3g", worst)
		}
	})
}

func maxDiff32(a, b []float32) float64 {
	worst := 0.0
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		worst = max(worst, d)
	}
	return worst
}

// cosine64 is cos(a, b) in float64.
func cosine64(a, b []float64) float64 {
	var dot, aa, bb float64
	for i := range a {
		dot, aa, bb = dot+a[i]*b[i], aa+a[i]*a[i], bb+b[i]*b[i]
	}
	return dot / math.Sqrt(aa*bb)
}

// fill returns n copies of v.
func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
