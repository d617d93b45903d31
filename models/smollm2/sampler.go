package smollm2

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Sampler draws tokens by a Sampling, with its own random numbers (PCG seeded by Sampling.Seed):
// the same Sampling and logits give the same tokens, which is how `mhalab generate --json` and
// the live explorer's step button agree.
type Sampler struct {
	s   Sampling
	rng *rand.Rand
}

// NewSampler returns a sampler for s (s already checked with Sampling.Check).
func NewSampler(s Sampling) *Sampler {
	return &Sampler{s: s, rng: rand.New(rand.NewPCG(s.Seed, 0x5eed))}
}

// argmax is the index of the largest logit (the first of equal ones, as torch.argmax).
func argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}

// Distribution is what s samples from, given logits [V]: the kept token ids, most likely
// first, and their probabilities (summing to 1). It applies, in Hugging Face's order
// (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper), softmax(logits / Temperature),
// the TopK largest, then the smallest prefix whose probability reaches TopP, renormalised.
// Greedy (or Temperature 0) keeps the argmax alone, with probability 1.
func (s Sampling) Distribution(logits []float32) (ids []int, probs []float64) {
	if s.Greedy || s.Temperature == 0 {
		return []int{argmax(logits)}, []float64{1}
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	if s.TopK > 0 && s.TopK < len(idx) {
		idx = idx[:s.TopK]
	}
	// Softmax of logits/T over the kept tokens, in float64.
	probs = make([]float64, len(idx))
	top := float64(logits[idx[0]]) / s.Temperature
	sum := 0.0
	for i, id := range idx {
		probs[i] = math.Exp(float64(logits[id])/s.Temperature - top)
		sum += probs[i]
	}
	// Top-p: keep the most likely tokens until their mass reaches TopP (always at least one).
	if s.TopP < 1 {
		acc := 0.0
		for i := range probs {
			acc += probs[i] / sum
			if acc >= s.TopP {
				probs, idx = probs[:i+1], idx[:i+1]
				break
			}
		}
		sum = 0
		for _, q := range probs {
			sum += q
		}
	}
	for i := range probs {
		probs[i] /= sum
	}
	return idx, probs
}

// Next picks a token from logits [V]: the argmax, or a draw from Distribution.
func (p *Sampler) Next(logits []float32) int {
	if p.s.Greedy || p.s.Temperature == 0 {
		return argmax(logits)
	}
	idx, probs := p.s.Distribution(logits)
	u := p.rng.Float64()
	for i, q := range probs {
		u -= q
		if u < 0 {
			return idx[i]
		}
	}
	return idx[len(idx)-1]
}
