package nb

import (
	"math"
	"slices"
	"testing"

	"github.com/mhalab/mhalab/models/probe"
)

// TestPronounTest: pairs with the same words, the singular noun the referent, two animals.
func TestPronounTest(t *testing.T) {
	ps := PronounTest(8, 1)
	if len(ps) != 8 {
		t.Fatalf("%d sentences, want 8", len(ps))
	}
	for i := 0; i < 8; i += 2 {
		a, b := ps[i], ps[i+1]
		if a.Referent != a.Subject || b.Referent != b.Object || a.Subject+"s" != b.Subject || a.Object != b.Object+"s" {
			t.Errorf("pair %d: %+v, %+v: want the referent to be the singular noun, same words", i/2, a, b)
		}
	}
	if got, want := ps[0].Sentence(), "The "+ps[0].Subject+" "+ps[0].Verb+" the "+ps[0].Object+" because it was tired."; got != want {
		t.Errorf("Sentence() = %q, want %q", got, want)
	}
}

// TestHeadScores: the scores on hand-made weights, and the head choices.
func TestHeadScores(t *testing.T) {
	// One layer, B=1, H=2, L=4 (t=2): head 0 looks at i−t+1, head 1 at key 0.
	a := probe.Array{Shape: []int{1, 2, 4, 4}, Data: make([]float32, 32)}
	for i := range 4 {
		a.Row(0, 0, i)[max(0, i-1)] = 1
		a.Row(0, 1, i)[0] = 1
	}
	if got := InductionScores([]probe.Array{a}, 2); got[0][0] != 1 || got[0][1] != 0 {
		t.Errorf("InductionScores = %v, want [[1 0]]", got)
	}
	// "it" at 3, referent at 2, other at 0: head 0 gives +1, head 1 gives −1.
	if got := ReferentScores([]probe.Array{a}, [][3]int{{3, 2, 0}}, Indices(0, 1, 1)); got[0][0] != 1 || got[0][1] != -1 {
		t.Errorf("ReferentScores = %v, want [[1 -1]]", got)
	}
	top := TopHeads([][]float64{{0.1, 0.9}, {0.5, 0.2}}, 2)
	if !slices.Equal(top, []probe.Head{{Layer: 0, Head: 1}, {Layer: 1, Head: 0}}) {
		t.Errorf("TopHeads = %v", top)
	}
	r := RandomHeads(3, 30, 9, 6, top)
	if len(r) != 6 || !slices.Equal(r, RandomHeads(3, 30, 9, 6, top)) {
		t.Errorf("RandomHeads(3, …) = %v: want 6 heads, the same for the same seed", r)
	}
	for _, h := range r {
		if slices.Contains(top, h) {
			t.Errorf("RandomHeads drew the excluded head %v", h)
		}
	}
	if got := MeanLoss([][]float32{{-1, -2, -3}, {-4, -5, -6}}, 1, 3); math.Abs(got-4) > 1e-12 {
		t.Errorf("MeanLoss = %g, want (2+3+5+6)/4 = 4", got)
	}
	rep := RepeatedTokens(1, 2, 5, 10, 20)
	if len(rep) != 2 || len(rep[0]) != 10 || !slices.Equal(rep[0][:5], rep[0][5:]) {
		t.Errorf("RepeatedTokens = %v: want 2 sequences of 5 tokens repeated", rep)
	}
}
