package decode_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/decode"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

func TestMain(m *testing.M) { backendtest.Main(m, "mhalib/decode") }

// TestGreedyDecodingMatchesRecompute runs greedy decoding of a tiny model with a cache and
// checks every step's logits against a full causal recompute of the sequence so far — with a
// full KVCache (one chunk, and chunks of 3 positions: kvchunks.go), and with a WindowedKVCache whose window (Left+1 = MaxLen) covers every position,
// which must give the same logits. Decoding stops at MaxLen, refused with ErrCacheFull.
func TestGreedyDecodingMatchesRecompute(t *testing.T) {
	model := decode.Decoder{Vocab: 13, Embed: 16, Heads: 2, Layers: 2, MaxLen: 10}
	const B = 2
	for _, c := range []struct {
		name  string
		cache func() (mhalib.StepCache, error)
	}{
		{"KVCache", func() (mhalib.StepCache, error) { return model.NewKVCache(B) }},
		{"KVCache/chunks of 3", func() (mhalib.StepCache, error) { // the prompt ends in chunk 1; steps rotate 2 tails
			c, err := model.NewKVCache(B)
			if err == nil {
				err = c.SetChunkLen(3)
			}
			return c, err
		}},
		{"WindowedKVCache", func() (mhalib.StepCache, error) { return model.NewWindowedKVCache(B, model.MaxLen-1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
				cache, err := c.cache()
				if err != nil {
					t.Fatal(err)
				}
				greedyMatchesRecompute(t, backend, model, cache)
			})
		})
	}
}

func greedyMatchesRecompute(t *testing.T, backend backends.Backend, model decode.Decoder, cache mhalib.StepCache) {
	const B, prompt = 2, 3
	ctx, session := newSession(t, backend, model, cache, 7)
	defer session.Finalize()
	recompute, err := context.NewExec(backend, ctx, func(ctx *context.Context, tokens *Node) *Node {
		return model.Logits(ctx, tokens)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer recompute.Finalize()

	seq := make([][]int32, B) // tokens so far, per sequence
	rng := rand.New(rand.NewPCG(1, 1))
	for b := range seq {
		for range prompt {
			seq[b] = append(seq[b], int32(rng.IntN(model.Vocab)))
		}
	}
	next := tokensTensor(seq, 0, prompt)
	for step := 0; ; step++ {
		logits, err := session.Step(next)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		// Full recompute over the sequence so far, padded to MaxLen (causal: padding is invisible).
		full, err := recompute.Exec(tokensTensor(padTo(seq, model.MaxLen), 0, model.MaxLen))
		if err != nil {
			t.Fatal(err)
		}
		n := next.Shape().Dim(1)
		pos := session.Cache().Len() - n
		got, want := logitRows(logits, 0, n), logitRows(full[0], pos, n)
		if diff, _ := mhatest.MaxAbsDiff(got, want); !(diff <= 1e-5) {
			t.Fatalf("step %d (positions %d…%d): cached logits differ from recompute by %g", step, pos, pos+n-1, diff)
		}
		if session.Cache().Len() == model.MaxLen {
			break
		}
		// Greedy: the most likely token after the last position.
		for b := range seq {
			seq[b] = append(seq[b], argmaxRow(got, b, n-1))
		}
		next = tokensTensor(seq, len(seq[0])-1, 1)
	}
	if len(seq[0]) != model.MaxLen {
		t.Fatalf("decoded %d tokens, want %d", len(seq[0]), model.MaxLen)
	}
	if _, err := session.Step(tokensTensor(seq, len(seq[0])-1, 1)); !errors.Is(err, mhalib.ErrCacheFull) {
		t.Errorf("step past MaxLen: err = %v, want ErrCacheFull", err)
	}
}

// TestStepRejectsEmptyTokens: no tokens ([B, 0]) is an ArgumentError naming the tensor's shape,
// the cache untouched, on every backend; an empty tensor never reaches the device (go-xla v0.1.4
// panics copying one to a GPU: mhalib's TestProgramRunRejectsEmptyTensors).
func TestStepRejectsEmptyTokens(t *testing.T) {
	model := decode.Decoder{Vocab: 13, Embed: 16, Heads: 2, Layers: 1, MaxLen: 6}
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		cache, err := model.NewKVCache(2)
		if err != nil {
			t.Fatal(err)
		}
		_, session := newSession(t, backend, model, cache, 7)
		defer session.Finalize()
		_, err = session.Step(tensors.FromShape(shapes.Make(dtypes.Int32, 2, 0)))
		if !errors.Is(err, mhalib.ErrInvalidArgument) || !strings.Contains(err.Error(), "tokens: shape (Int32)[2 0]: no tokens") {
			t.Errorf("Step of [2, 0] tokens: err = %v, want an ErrInvalidArgument naming the shape", err)
		}
		if n := session.Cache().Len(); n != 0 {
			t.Errorf("cache length %d after the rejected step, want 0", n)
		}
	})
}

// TestWindowedDecodingForgets: with a window of 2 earlier positions, the logits of the last
// position do not depend on the first token (out of every layer's window), while with a full
// cache they do.
func TestWindowedDecodingForgets(t *testing.T) {
	backend, err := backendtest.Get("go")
	if err != nil {
		t.Fatal(err)
	}
	model := decode.Decoder{Vocab: 11, Embed: 8, Heads: 2, Layers: 1, MaxLen: 8}
	lastLogits := func(cache mhalib.StepCache, first int32) *mhatest.Tensor {
		_, session := newSession(t, backend, model, cache, 3) // the same weights every time, the cache's own tensors
		defer session.Finalize()
		var out *tensors.Tensor
		var err error
		for _, tok := range []int32{first, 4, 5, 6, 7} { // one token per step
			if out, err = session.Step(tensors.FromValue([][]int32{{tok}})); err != nil {
				t.Fatal(err)
			}
		}
		return logitRows(out, 0, 1)
	}
	for _, c := range []struct {
		name    string
		left    int // -1: full KVCache
		depends bool
	}{{"window 2", 2, false}, {"full", -1, true}} {
		logits := func(first int32) *mhatest.Tensor {
			var cache mhalib.StepCache
			var err error
			if c.left < 0 {
				cache, err = model.NewKVCache(1)
			} else {
				cache, err = model.NewWindowedKVCache(1, c.left)
			}
			if err != nil {
				t.Fatal(err)
			}
			return lastLogits(cache, first)
		}
		diff, _ := mhatest.MaxAbsDiff(logits(1), logits(9))
		if got := diff > 1e-6; got != c.depends {
			t.Errorf("%s: the last logits change by %g with the first token; want a dependence: %v", c.name, diff, c.depends)
		}
	}
}

// newSession returns a fresh context whose variables are initialised from seed, and a session
// decoding with it and cache.
func newSession(t *testing.T, backend backends.Backend, model decode.Decoder, cache mhalib.StepCache, seed int64) (*context.Context, *decode.Session) {
	t.Helper()
	ctx := context.New()
	if err := ctx.SetRNGStateFromSeed(seed); err != nil {
		t.Fatal(err)
	}
	session, err := decode.NewSession(backend, ctx, model, cache)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, session
}

// tokensTensor returns seq[b][from:from+n] as an int32 tensor [B, n].
func tokensTensor(seq [][]int32, from, n int) *tensors.Tensor {
	data := make([]int32, 0, len(seq)*n)
	for _, s := range seq {
		data = append(data, s[from:from+n]...)
	}
	return tensors.FromFlatDataAndDimensions(data, len(seq), n)
}

func padTo(seq [][]int32, n int) [][]int32 {
	out := make([][]int32, len(seq))
	for b, s := range seq {
		out[b] = append(append([]int32(nil), s...), make([]int32, n-len(s))...)
	}
	return out
}

// logitRows returns logits[:, from:from+n, :] of float32 logits [B, L, V] as a reference tensor.
func logitRows(logits *tensors.Tensor, from, n int) *mhatest.Tensor {
	d := logits.Shape().Dimensions
	all := mhatest.FromFloat32(tensors.MustCopyFlatData[float32](logits), d...)
	out := mhatest.New(d[0], n, d[2])
	for b := range d[0] {
		for i := range n {
			for v := range d[2] {
				out.Set(all.At(b, from+i, v), b, i, v)
			}
		}
	}
	return out
}

func argmaxRow(logits *mhatest.Tensor, b, i int) int32 {
	best := 0
	for v := range logits.Shape[2] {
		if logits.At(b, i, v) > logits.At(b, i, best) {
			best = v
		}
	}
	return int32(best)
}
