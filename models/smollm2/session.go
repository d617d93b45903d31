package smollm2

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/models/quant"
)

// Runner holds the model's weights as variables for one backend, and runs whole sequences
// (Logits) or opens cached decoding sessions (NewSession).
type Runner struct {
	Model   *Model
	backend backends.Backend
	ctx     *context.Context
	full    *context.Exec              // Logits without a cache
	attn    *context.Exec              // LogitsAndAttention, built on first use
	probes  map[probeKey]*context.Exec // Probe's graphs (probe.go), built on first use
	packed  bool                       // matrices as quant carriers (NewRunner)
}

// Packed reports whether the runner multiplies by packed Q8_0/Q4_1 matrices (NewRunner on a
// backend that computes them) rather than float32 ones.
func (r *Runner) Packed() bool { return r.packed }

// NewRunner loads the weights into a new context for backend: the matrices packed (Q8_0/Q4_1
// as in the file, dequantised inside the matrix–vector kernel) where the backend computes
// quant carriers (quant.Available: the pure-Go backend with fastgo), else dequantised to
// float32.
func (m *Model) NewRunner(backend backends.Backend) (*Runner, error) {
	return m.newRunner(backend, quant.Available(backend))
}

// NewFloat32Runner is NewRunner with every weight dequantised to float32, on any backend.
func (m *Model) NewFloat32Runner(backend backends.Backend) (*Runner, error) {
	return m.newRunner(backend, false)
}

func (m *Model) newRunner(backend backends.Backend, packed bool) (*Runner, error) {
	ctx := context.New()
	m.loadVariables(ctx, packed, !packed && transposedOn(backend))
	r := &Runner{Model: m, backend: backend, ctx: ctx, packed: packed}
	var err error
	r.full, err = context.NewExec(backend, ctx, func(ctx *context.Context, tokens *Node) *Node {
		return m.Logits(ctx, tokens)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Logits runs the model over ids (no cache) and returns the logits of every position [n][V].
func (r *Runner) Logits(ids []int) ([][]float32, error) {
	if err := r.checkIDs(ids); err != nil {
		return nil, err
	}
	out, err := r.full.Exec(idsTensor(ids))
	if err != nil {
		return nil, err
	}
	return rows(out[0], len(ids), r.Model.Config.VocabSize), nil
}

// Attention runs the model over ids (no cache) and returns the logits of every position [n][V]
// and the attention weights of every layer and query head: weights[layer][head][query][key]
// (n × n, zero above the diagonal; each row sums to 1).
func (r *Runner) Attention(ids []int) ([][]float32, [][][][]float32, error) {
	if err := r.checkIDs(ids); err != nil {
		return nil, nil, err
	}
	if r.attn == nil {
		m := r.Model
		e, err := context.NewExec(r.backend, r.ctx, func(ctx *context.Context, tokens *Node) []*Node {
			logits, w := m.LogitsAndAttention(ctx, tokens)
			return []*Node{logits, w}
		})
		if err != nil {
			return nil, nil, err
		}
		r.attn = e
	}
	out, err := r.attn.Exec(idsTensor(ids))
	if err != nil {
		return nil, nil, err
	}
	c, n := r.Model.Config, len(ids)
	logits := rows(out[0], n, c.VocabSize)
	flat := tensors.MustCopyFlatData[float32](out[1]) // [layers, 1, H, n, n]
	out[1].FinalizeAll()
	weights := make([][][][]float32, c.NumHiddenLayers)
	for l := range weights {
		weights[l] = make([][][]float32, c.NumAttentionHeads)
		for h := range weights[l] {
			weights[l][h] = make([][]float32, n)
			for q := range n {
				at := ((l*c.NumAttentionHeads+h)*n + q) * n
				weights[l][h][q] = flat[at : at+n]
			}
		}
	}
	return logits, weights, nil
}

// Finalize releases the compiled graphs and the variables' device buffers.
func (r *Runner) Finalize() {
	if r.attn != nil {
		r.attn.Finalize()
	}
	for _, e := range r.probes {
		e.Finalize()
	}
	r.full.Finalize()
	r.ctx.Finalize()
}

func (r *Runner) checkIDs(ids []int) error {
	if len(ids) == 0 {
		return errors.New("smollm2: no tokens")
	}
	if len(ids) > r.Model.Config.MaxPositionEmbeddings {
		return fmt.Errorf("smollm2: %d tokens exceed the context of %d", len(ids), r.Model.Config.MaxPositionEmbeddings)
	}
	for _, id := range ids {
		if id < 0 || id >= r.Model.Config.VocabSize {
			return fmt.Errorf("smollm2: token id %d outside the vocabulary of %d", id, r.Model.Config.VocabSize)
		}
	}
	return nil
}

func idsTensor(ids []int) *tensors.Tensor {
	v := make([]int32, len(ids))
	for i, id := range ids {
		v[i] = int32(id)
	}
	return tensors.FromFlatDataAndDimensions(v, 1, len(ids))
}

// rows copies logits [1, n, V] into n slices.
func rows(t *tensors.Tensor, n, V int) [][]float32 {
	flat := tensors.MustCopyFlatData[float32](t)
	t.FinalizeAll()
	out := make([][]float32, n)
	for i := range out {
		out[i] = flat[i*V : (i+1)*V]
	}
	return out
}

// Session is one sequence decoded with a KV cache: Feed appends tokens and returns the logits
// after them. Its cache holds maxLen positions of every layer: [1, Hkv, maxLen, hd] keys and
// values × NumHiddenLayers, in KVCache.Step's chunks when maxLen > 512 (a one-token Feed then
// rewrites only the last chunk).
type Session struct {
	r        *Runner
	cache    *mhalib.KVCache
	last     *context.Exec // logits of the last new position
	all      *context.Exec // logits of every new position
	maxLen   int
	scopeTag string
	err      error // a failed step leaves the cache in an unknown state
	pending  []int // generated but not yet fed (the last token of a Generate); the next feed prepends them
}

var sessionCount atomic.Int64

// NewSession starts a sequence of at most maxLen positions (≤ the model's context).
func (r *Runner) NewSession(maxLen int) (*Session, error) {
	c := r.Model.Config
	if maxLen < 1 || maxLen > c.MaxPositionEmbeddings {
		return nil, fmt.Errorf("smollm2: session length %d outside 1 … %d (the model's context)", maxLen, c.MaxPositionEmbeddings)
	}
	cache, err := mhalib.NewKVCache(1, c.NumKeyValueHeads, maxLen, c.HeadDim, c.HeadDim)
	if err != nil {
		return nil, err
	}
	// Each session keeps its cache variables in its own scope of the runner's context.
	s := &Session{r: r, cache: cache, maxLen: maxLen, scopeTag: fmt.Sprintf("session_%d", sessionCount.Add(1))}
	m := r.Model
	build := func(lastOnly bool) (*context.Exec, error) {
		return context.NewExec(r.backend, r.ctx, func(ctx *context.Context, tokens, pos *Node) *Node {
			return m.StepLogits(ctx, tokens, pos, cache, s.scopeTag, lastOnly)
		})
	}
	if s.last, err = build(true); err != nil {
		return nil, err
	}
	if s.all, err = build(false); err != nil {
		return nil, err
	}
	return s, nil
}

// Len is the number of positions in the sequence (in the cache, or generated and not yet fed).
func (s *Session) Len() int { return s.cache.Len() + len(s.pending) }

// Cap is the session's capacity.
func (s *Session) Cap() int { return s.maxLen }

// Feed appends ids and returns the logits [V] after the last of them.
func (s *Session) Feed(ids []int) ([]float32, error) {
	out, err := s.feed(ids, s.last)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// FeedAll appends ids and returns the logits [n][V] after each of them.
func (s *Session) FeedAll(ids []int) ([][]float32, error) { return s.feed(ids, s.all) }

func (s *Session) feed(ids []int, e *context.Exec) ([][]float32, error) {
	if s.err != nil {
		return nil, fmt.Errorf("smollm2: this session failed earlier: %w", s.err)
	}
	if err := s.r.checkIDs(ids); err != nil {
		return nil, err
	}
	skip := len(s.pending)
	ids = append(append([]int(nil), s.pending...), ids...)
	pos, err := s.cache.Advance(len(ids))
	if err != nil {
		return nil, fmt.Errorf("smollm2: %d more tokens do not fit: %w", len(ids), err)
	}
	out, err := e.Exec(idsTensor(ids), int32(pos))
	if err != nil {
		s.err = err
		return nil, err
	}
	s.pending = nil
	if e == s.last {
		return rows(out[0], 1, s.r.Model.Config.VocabSize), nil
	}
	return rows(out[0], len(ids), s.r.Model.Config.VocabSize)[skip:], nil
}

// Finalize releases the session's compiled graphs and its cache variables.
func (s *Session) Finalize() {
	s.last.Finalize()
	s.all.Finalize()
	_ = s.r.ctx.InAbsPath("/" + s.scopeTag).DeleteVariablesInScope()
}

// Reset starts a new sequence in the session, keeping its compiled graphs (the positions filled
// become 0; the cache's old entries are masked out until they are overwritten). A session that
// failed stays failed.
func (s *Session) Reset() {
	s.cache.Reset()
	s.pending = nil
}

// CacheBytes is the size of the key/value tensors the session holds now, summed over its cache
// variables (keys and values of every layer, [1, Hkv, maxLen, hd] each, or ⌈maxLen/T⌉ chunks
// of T positions): measured from the
// tensors, 0 before the first Feed creates them.
func (s *Session) CacheBytes() int64 {
	var n int64
	s.r.ctx.InAbsPath("/" + s.scopeTag).EnumerateVariablesInScope(func(v *context.Variable) {
		if !v.HasValue() {
			return
		}
		if t, err := v.Value(); err == nil {
			n += int64(t.Memory())
		}
	})
	return n
}
