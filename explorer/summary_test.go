package explorer

import (
	"math"
	"testing"
)

// oneHot returns an [L, L] matrix with weight 1 at (q, pick(q)).
func oneHot(L int, pick func(q int) int) [][]float32 {
	w := make([][]float32, L)
	for q := range w {
		w[q] = make([]float32, L)
		w[q][pick(q)] = 1
	}
	return w
}

// TestSummarizeKinds: hand-made heads get the numbers and kinds their definitions give.
func TestSummarizeKinds(t *testing.T) {
	tokens := []string{"[CLS]", "the", "cat", "sat", "[SEP]"}
	L := len(tokens)
	uniform := make([][]float32, L)
	for q := range uniform {
		uniform[q] = []float32{0.2, 0.2, 0.2, 0.2, 0.2}
	}
	att := [][][][]float32{{
		oneHot(L, func(q int) int { return max(q-1, 0) }),   // previous token (q=0 → itself)
		oneHot(L, func(q int) int { return min(q+1, L-1) }), // next token
		oneHot(L, func(q int) int { return q }),             // self
		oneHot(L, func(q int) int { return L - 1 }),         // all on [SEP]
		uniform,
	}}
	s, err := Summarize(att, tokens)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{KindPrevious, KindNext, KindSelf, KindDelimiter, KindBroad}
	for h, k := range want {
		if s[0][h].Kind != k {
			t.Errorf("head %d: kind %q, want %q (%+v)", h, s[0][h].Kind, k, s[0][h])
		}
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	near("prev head PrevShare", s[0][0].PrevShare, 1)
	near("prev head MeanDistance", s[0][0].MeanDistance, 4.0/5)
	near("self head Entropy", s[0][2].Entropy, 0)
	near("sep head SEPShare", s[0][3].SEPShare, 1)
	near("sep head MeanDistance", s[0][3].MeanDistance, (4+3+2+1+0)/5.0)
	near("uniform Entropy", s[0][4].Entropy, math.Log(5))
	near("uniform NormEntropy", s[0][4].NormEntropy, 1)
	near("uniform CLSShare", s[0][4].CLSShare, 0.2)
	near("uniform MeanDistance", s[0][4].MeanDistance, (2.0+1.4+1.2+1.4+2.0)/5)
}

func TestSummarizeBadShapes(t *testing.T) {
	if _, err := Summarize([][][][]float32{{{{1, 0}}}}, []string{"a", "b"}); err == nil {
		t.Error("1 query row for 2 tokens: no error")
	}
	if _, err := Summarize(nil, nil); err == nil {
		t.Error("no tokens: no error")
	}
}

// TestInductionScores: a head that attends exactly to the token after the earlier occurrence
// scores 1, a previous-token head 0, and a short matrix is an error.
func TestInductionScores(t *testing.T) {
	const start, period = 1, 4
	L := start + 2*period
	mk := func(target func(q int) int) [][]float32 {
		w := make([][]float32, L)
		for q := range w {
			w[q] = make([]float32, L)
			w[q][min(max(target(q), 0), q)] = 1
		}
		return w
	}
	induction := mk(func(q int) int {
		if q >= start+period {
			return q - period + 1
		}
		return 0
	})
	previous := mk(func(q int) int { return q - 1 })
	got, err := InductionScores([][][][]float32{{induction, previous}}, start, period)
	if err != nil {
		t.Fatal(err)
	}
	if got[0][0] != 1 || got[0][1] != 0 {
		t.Errorf("scores %v, want [[1 0]]", got)
	}
	if _, err := InductionScores([][][][]float32{{induction[:L-1]}}, start, period); err == nil {
		t.Error("a matrix shorter than start + 2·period: no error")
	}
	ids := InductionTokens(5, 10, 20)
	for i := range 5 {
		if ids[i] != ids[i+5] || ids[i] < 10 || ids[i] >= 20 {
			t.Fatalf("InductionTokens(5, 10, 20) = %v: want two equal halves in [10, 20)", ids)
		}
	}
}
