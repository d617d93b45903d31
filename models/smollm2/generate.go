package smollm2

import (
	"errors"
	"fmt"
	"math"
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
	p := NewSampler(sampling)
	logits, err := s.Feed(prompt)
	if err != nil {
		return nil, err
	}
	var out []int
	for len(out) < maxNew {
		id := p.Next(logits)
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
