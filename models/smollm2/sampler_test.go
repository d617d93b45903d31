package smollm2

import (
	"math"
	"testing"
)

// TestDistribution: temperature, then top-k, then top-p, renormalised; greedy keeps the argmax;
// the sampler draws only kept tokens, the same ones for the same seed.
func TestDistribution(t *testing.T) {
	logits := []float32{1, 2, 0, -1} // most likely: 1, 0, 2, 3
	e2, e1, e0 := math.Exp(2), math.Exp(1), 1.0
	for _, c := range []struct {
		s     Sampling
		ids   []int
		probs []float64
	}{
		{Sampling{Greedy: true}, []int{1}, []float64{1}},
		{Sampling{Temperature: 1, TopK: 3, TopP: 1}, []int{1, 0, 2}, []float64{e2 / (e2 + e1 + e0), e1 / (e2 + e1 + e0), e0 / (e2 + e1 + e0)}},
		{Sampling{Temperature: 1, TopK: 3, TopP: 0.8}, []int{1, 0}, []float64{e2 / (e2 + e1), e1 / (e2 + e1)}}, // 0.665 < 0.8 ≤ 0.910
		{Sampling{Temperature: 0.5, TopK: 2, TopP: 1}, []int{1, 0}, []float64{math.Exp(4) / (math.Exp(4) + e2), e2 / (math.Exp(4) + e2)}},
	} {
		ids, probs := c.s.Distribution(logits)
		if len(ids) != len(c.ids) {
			t.Fatalf("%+v: ids %v, want %v", c.s, ids, c.ids)
		}
		for i := range ids {
			if ids[i] != c.ids[i] || math.Abs(probs[i]-c.probs[i]) > 1e-12 {
				t.Errorf("%+v: %v %v, want %v %v", c.s, ids, probs, c.ids, c.probs)
				break
			}
		}
	}
	s := Sampling{Temperature: 1, TopK: 3, TopP: 0.8, Seed: 7}
	a, b := NewSampler(s), NewSampler(s)
	for range 50 {
		x, y := a.Next(logits), b.Next(logits)
		if x != y || (x != 0 && x != 1) {
			t.Fatalf("draws %d and %d: want the same, 0 or 1", x, y)
		}
	}
}
