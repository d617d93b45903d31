package smollm2

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Sampling chooses the next token from the logits. The zero value is greedy (argmax).
type Sampling struct {
	Greedy      bool    // argmax; also when Temperature is 0
	Temperature float64 // > 0: sample from softmax(logits / Temperature)
	TopK        int     // > 0: keep the TopK most likely tokens (0: all)
	TopP        float64 // (0, 1]: keep the smallest set of most likely tokens whose probability reaches TopP (1: all)
	Seed        uint64  // of the random numbers
}

// Check validates the options: one clear error naming the option.
func (s Sampling) Check() error {
	if s.Greedy || s.Temperature == 0 {
		return nil
	}
	switch {
	case !(s.Temperature > 0) || math.IsInf(s.Temperature, 0):
		return fmt.Errorf("temperature %g: want a positive number", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("top-k %d: want ≥ 0 (0 keeps every token)", s.TopK)
	case !(s.TopP > 0 && s.TopP <= 1):
		return fmt.Errorf("top-p %g: want a number in (0, 1]", s.TopP)
	}
	return nil
}

// sampler draws tokens by a Sampling.
type sampler struct {
	s   Sampling
	rng *rand.Rand
}

func newSampler(s Sampling) *sampler {
	return &sampler{s: s, rng: rand.New(rand.NewPCG(s.Seed, 0x5eed))}
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

// next picks a token: argmax, or, with a temperature, the logits divided by it, cut to the
// TopK largest, then to the smallest prefix (by probability) reaching TopP, renormalised and
// sampled — the order of Hugging Face's TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper.
func (p *sampler) next(logits []float32) int {
	if p.s.Greedy || p.s.Temperature == 0 {
		return argmax(logits)
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	if p.s.TopK > 0 && p.s.TopK < len(idx) {
		idx = idx[:p.s.TopK]
	}
	// Softmax of logits/T over the kept tokens, in float64.
	probs := make([]float64, len(idx))
	top := float64(logits[idx[0]]) / p.s.Temperature
	sum := 0.0
	for i, id := range idx {
		probs[i] = math.Exp(float64(logits[id])/p.s.Temperature - top)
		sum += probs[i]
	}
	// Top-p: keep the most likely tokens until their mass reaches TopP (always at least one).
	if p.s.TopP < 1 {
		acc := 0.0
		for i := range probs {
			acc += probs[i] / sum
			if acc >= p.s.TopP {
				probs, idx = probs[:i+1], idx[:i+1]
				break
			}
		}
		sum = 0
		for _, q := range probs {
			sum += q
		}
	}
	u := p.rng.Float64() * sum
	for i, q := range probs {
		u -= q
		if u < 0 {
			return idx[i]
		}
	}
	return idx[len(idx)-1]
}

// ErrPromptTooLong is wrapped by Generate's error when the prompt does not fit the context.
var ErrPromptTooLong = errors.New("prompt too long")

// Generate feeds prompt to the session and then generates up to maxNew tokens, calling emit
// with each (the stop token excluded). Generation stops at the model's end-of-sequence token
// or after maxNew tokens (or when the session is full). It returns the generated ids. The
// sequence continues in the session: the next Feed or Generate follows the generated tokens
// (the stop token is not part of it).
func (s *Session) Generate(prompt []int, maxNew int, sampling Sampling, emit func(id int) error) ([]int, error) {
	if err := sampling.Check(); err != nil {
		return nil, err
	}
	if len(prompt) == 0 {
		return nil, errors.New("smollm2: empty prompt")
	}
	if s.Len()+len(prompt) > s.Cap() {
		return nil, fmt.Errorf("smollm2: %w: %d tokens, with %d already in the session, exceed its %d positions",
			ErrPromptTooLong, len(prompt), s.Len(), s.Cap())
	}
	p := newSampler(sampling)
	logits, err := s.Feed(prompt)
	if err != nil {
		return nil, err
	}
	var out []int
	for len(out) < maxNew {
		id := p.next(logits)
		if id == s.r.Model.Tokenizer.EOS {
			break
		}
		out = append(out, id)
		if emit != nil {
			if err := emit(id); err != nil {
				return out, err
			}
		}
		if len(out) == maxNew || s.Len() == s.Cap() {
			s.pending = append(s.pending, id) // part of the sequence: fed with the next turn
			break
		}
		if logits, err = s.Feed([]int{id}); err != nil {
			return out, err
		}
	}
	return out, nil
}
