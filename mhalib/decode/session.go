package decode

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// Session runs cached decoding steps of a Decoder on a backend: each call to Step feeds the next
// tokens, stores their keys and values in the cache and returns their logits. One graph is
// compiled per distinct step length (e.g. the prompt length, then 1).
type Session struct {
	model Decoder
	cache mhalib.StepCache
	exec  *context.Exec
}

// NewSession prepares cached decoding with model's variables in ctx and cache — a full
// mhalib.KVCache (Decoder.NewKVCache) or a ring of the last positions (Decoder.NewWindowedKVCache).
// The cache's batch is the session's.
func NewSession(backend backends.Backend, ctx *context.Context, model Decoder, cache mhalib.StepCache) (*Session, error) {
	if cache == nil {
		return nil, &mhalib.ArgumentError{Arg: "cache", Msg: "is nil"}
	}
	s := &Session{model: model, cache: cache}
	var err error
	s.exec, err = context.NewExec(backend, ctx, func(ctx *context.Context, tokens, pos *Node) *Node {
		return model.StepLogits(ctx, tokens, pos, cache)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Cache returns the session's cache (its Len is the number of positions decoded).
func (s *Session) Cache() mhalib.StepCache { return s.cache }

// Reset starts new sequences.
func (s *Session) Reset() { s.cache.Reset() }

// Step feeds tokens [B, n] (int32) as the next n positions and returns their logits [B, n, V].
// It returns an error wrapping mhalib.ErrCacheFull when they do not fit in the cache or in the
// model's MaxLen positions (its table of position embeddings). When the
// backend fails, the cache is Reset (its tensors may be partly written): start the sequences
// again.
func (s *Session) Step(tokens *tensors.Tensor) (*tensors.Tensor, error) {
	if tokens.Rank() != 2 {
		return nil, &mhalib.ArgumentError{Arg: "tokens", Msg: fmt.Sprintf("shape %s: want [batch, n]", tokens.Shape())}
	}
	if tokens.Shape().Size() == 0 { // named as the caller passed it (the cache's Advance would say "n: 0")
		return nil, &mhalib.ArgumentError{Arg: "tokens", Msg: fmt.Sprintf("shape %s: no tokens", tokens.Shape())}
	}
	n := tokens.Shape().Dim(1)
	if done := s.cache.Len(); done+n > s.model.MaxLen {
		return nil, fmt.Errorf("%w: %d positions decoded + %d new > the model's MaxLen = %d", mhalib.ErrCacheFull, done, n, s.model.MaxLen)
	}
	pos, err := s.cache.Advance(n)
	if err != nil {
		return nil, err
	}
	out, err := s.exec.Exec(tokens, int32(pos))
	if err != nil {
		s.cache.Reset()
		return nil, err
	}
	return out[0], nil
}

// Finalize releases the compiled graphs.
func (s *Session) Finalize() { s.exec.Finalize() }
