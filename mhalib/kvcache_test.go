package mhalib_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

func TestKVCacheAdvanceAndReset(t *testing.T) {
	c, err := mhalib.NewKVCache(1, 2, 5, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ n, wantPos int }{{3, 0}, {1, 3}, {1, 4}} {
		pos, err := c.Advance(step.n)
		if err != nil || pos != step.wantPos {
			t.Fatalf("Advance(%d) = %d, %v; want %d", step.n, pos, err, step.wantPos)
		}
	}
	if _, err := c.Advance(1); !errors.Is(err, mhalib.ErrCacheFull) {
		t.Fatalf("Advance past capacity: err = %v, want ErrCacheFull", err)
	} else if want := "mhalib: KV cache full: 5 positions filled + 1 new > capacity maxLen = 5"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if c.Len() != 5 || c.Cap() != 5 {
		t.Fatalf("Len, Cap = %d, %d after a refused Advance; want 5, 5", c.Len(), c.Cap())
	}
	c.Reset()
	if pos, err := c.Advance(5); pos != 0 || err != nil {
		t.Fatalf("after Reset, Advance(5) = %d, %v; want 0, nil", pos, err)
	}
	if _, err := c.Advance(0); !errors.Is(err, mhalib.ErrInvalidArgument) {
		t.Fatalf("Advance(0): err = %v, want ErrInvalidArgument", err)
	}
	if _, err := mhalib.NewKVCache(1, 0, 5, 4, 4); !errors.Is(err, mhalib.ErrInvalidArgument) {
		t.Fatalf("NewKVCache with 0 heads: err = %v, want ErrInvalidArgument", err)
	}
}

// TestKVCacheAppendAndAttend checks the graph side: appending n rows at pos (the DynamicUpdateSlice
// path on XLA, Where/one-hot on the pure-Go backend) and attending over the cache equal plain
// attention with bottom-right causal alignment over the first pos+n positions.
func TestKVCacheAppendAndAttend(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, h, maxLen, d = 2, 2, 7, 3
		rng := rand.New(rand.NewPCG(5, 6))
		c, err := mhalib.NewKVCache(B, h, maxLen, d, d)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.New()
		exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, q, k, v, pos *Node) []*Node {
			keys, values := c.Append(ctx.In("cache"), k, v, pos)
			out := c.Attend(q, keys, values, pos, 0.5)
			return []*Node{keys, values, out}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer exec.Finalize()
		all := mhatest.Rand(rng, -1, 1, B, h, maxLen, d) // the keys (and, negated, values) of every position
		// A first sequence fills the cache; after Reset, a second one must not see its entries.
		for step, n := range []int{3, 1, 2, 1, -1, 2, 3} {
			if n < 0 {
				c.Reset()
				all = mhatest.Rand(rng, -1, 1, B, h, maxLen, d)
				continue
			}
			pos, err := c.Advance(n)
			if err != nil {
				t.Fatal(err)
			}
			k := rowsOf(all, pos, n)
			v := negated(k)
			q := mhatest.Rand(rng, -1, 1, B, h, n, d)
			outs, err := exec.Exec(toTensor(q, dtypes.Float64), toTensor(k, dtypes.Float64), toTensor(v, dtypes.Float64), int32(pos))
			if err != nil {
				t.Fatal(err)
			}
			filled := pos + n
			keys, values := fromTensor(t, outs[0]), fromTensor(t, outs[1])
			assertClose(t, "cached keys", toTensor(rowsOf(keys, 0, filled), dtypes.Float64), rowsOf(all, 0, filled), 0)
			assertClose(t, "cached values", toTensor(rowsOf(values, 0, filled), dtypes.Float64), negated(rowsOf(all, 0, filled)), 0)
			bias, err := mhatest.CausalBias(mhatest.BottomRight, B, h, n, filled, math.Inf(-1))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := mhatest.SDPA(q, rowsOf(all, 0, filled), negated(rowsOf(all, 0, filled)), bias, 0.5)
			assertClose(t, fmt.Sprintf("step %d: attention over the cache", step), outs[2], want, 1e-12)
		}
	})
}

// rowsOf returns x[:, :, from:from+n, :] of x [B, h, L, d].
func rowsOf(x *mhatest.Tensor, from, n int) *mhatest.Tensor {
	B, h, d := x.Shape[0], x.Shape[1], x.Shape[3]
	out := mhatest.New(B, h, n, d)
	for b := range B {
		for m := range h {
			for i := range n {
				for j := range d {
					out.Set(x.At(b, m, from+i, j), b, m, i, j)
				}
			}
		}
	}
	return out
}

func negated(x *mhatest.Tensor) *mhatest.Tensor {
	y := x.Clone()
	for i := range y.Data {
		y.Data[i] = -y.Data[i]
	}
	return y
}

// TestCachedSelfAttentionMatchesCausalMHA decodes a sequence in chunks and compares every
// chunk with causal MultiHeadAttention over the whole sequence, with the same weights.
func TestCachedSelfAttentionMatchesCausalMHA(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, tc := range []struct {
			name     string
			separate bool
			noBias   bool
		}{{"fused", false, false}, {"separate", true, false}, {"fused/no-bias", false, true}} {
			t.Run(tc.name, func(t *testing.T) {
				const B, L, E, h = 2, 9, 8, 2
				rng := rand.New(rand.NewPCG(seedOf(tc.name), 11))
				p := randParams(rng, E, h, E, E, nil, !tc.noBias, false, false)
				ctx := newCtx(t, p, !tc.separate, dtypes.Float64)
				x := mhatest.Rand(rng, -1, 1, B, L, E)
				want, _, err := mhatest.MHA(p, x, x, x, mhatest.MHAOptions{Causal: mhatest.TopLeft})
				if err != nil {
					t.Fatal(err)
				}
				cache, err := mhalib.NewKVCache(B, h, L, E/h, E/h)
				if err != nil {
					t.Fatal(err)
				}
				exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, x, pos *Node) *Node {
					return mhalib.CachedSelfAttention(ctx, x, h, cache, pos).Done()
				})
				if err != nil {
					t.Fatal(err)
				}
				defer exec.Finalize()
				for _, n := range []int{4, 1, 1, 2, 1} {
					pos, err := cache.Advance(n)
					if err != nil {
						t.Fatal(err)
					}
					out, err := exec.Exec(toTensor(seqRows(x, pos, n), dtypes.Float64), int32(pos))
					if err != nil {
						t.Fatal(err)
					}
					assertClose(t, "cached step vs causal MHA", out[0], seqRows(want, pos, n), 1e-12)
				}
			})
		}
	})
}

// seqRows returns x[:, from:from+n, :] of x [B, L, E].
func seqRows(x *mhatest.Tensor, from, n int) *mhatest.Tensor {
	B, E := x.Shape[0], x.Shape[2]
	out := mhatest.New(B, n, E)
	for b := range B {
		for i := range n {
			for j := range E {
				out.Set(x.At(b, from+i, j), b, i, j)
			}
		}
	}
	return out
}

// TestDecoderGreedyDecodingMatchesRecompute runs greedy decoding of a tiny model with the KV
// cache and checks every step's logits against a full causal recompute of the sequence so far.
func TestDecoderGreedyDecodingMatchesRecompute(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		model := mhalib.Decoder{Vocab: 13, Embed: 16, Heads: 2, Layers: 2, MaxLen: 10}
		const B, prompt = 2, 3
		ctx := context.New()
		if err := ctx.SetRNGStateFromSeed(7); err != nil {
			t.Fatal(err)
		}
		session, err := mhalib.NewDecodeSession(backend, ctx, model, B)
		if err != nil {
			t.Fatal(err)
		}
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
			if session.Cache().Len() == model.MaxLen && err == nil && step > 0 {
				// Filled the cache: the next step must be refused.
				defer func() {
					if _, err := session.Step(tokensTensor(seq, len(seq[0])-1, 1)); !errors.Is(err, mhalib.ErrCacheFull) {
						t.Errorf("step past MaxLen: err = %v, want ErrCacheFull", err)
					}
				}()
			}
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
			got, want := logitRows(t, logits, 0, n), logitRows(t, full[0], pos, n)
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
	})
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
func logitRows(t *testing.T, logits *tensors.Tensor, from, n int) *mhatest.Tensor {
	return seqRows(fromTensor(t, logits), from, n)
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
