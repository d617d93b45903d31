package mhalib_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// poisoned returns x with every 7th value NaN and the 3rd of each 7 −Inf: the keys of a broken
// model's sequence.
func poisoned(x *mhatest.Tensor) *mhatest.Tensor {
	y := x.Clone()
	for i := range y.Data {
		switch i % 7 {
		case 0:
			y.Data[i] = math.NaN()
		case 3:
			y.Data[i] = math.Inf(-1)
		}
	}
	return y
}

// A sequence whose keys and values hold NaN and −Inf (a broken model) leaves them in the cache
// tensors. After Reset, a clean sequence decoded one token at a time must equal attention over
// its own keys: masked positions get the weight 0, but 0·NaN is NaN and NaN + (−Inf) is NaN, so
// stale non-finite entries must not survive Reset — for KVCache.Step (chunks of 4 positions:
// stale rows in the tail and in chunks rotated in), KVCache.Append + Attend, and the ring of
// WindowedKVCache. float64, Hq 4 over 2 key/value heads. Seen failing (NaN outputs) before
// Reset cleared the tensors.
func TestKVCacheResetAfterNonFinite(t *testing.T) {
	const B, Hq, h, maxLen, d, left = 1, 4, 2, 10, 3, 3
	type stepFn func(c mhalib.StepCache, ctx *context.Context, q, k, v, pos *Node) *Node
	appendAttend := func(c mhalib.StepCache, ctx *context.Context, q, k, v, pos *Node) *Node {
		kc := c.(*mhalib.KVCache)
		keys, values := kc.Append(ctx, k, v, pos)
		return kc.Attend(q, keys, values, pos, 0.5)
	}
	step := func(c mhalib.StepCache, ctx *context.Context, q, k, v, pos *Node) *Node {
		return c.Step(ctx, q, k, v, pos, 0.5)
	}
	for _, tc := range []struct {
		name   string
		cache  func() mhalib.StepCache
		run    stepFn
		window int // −1: none
	}{
		{"KVCache.Step", func() mhalib.StepCache {
			c, _ := mhalib.NewKVCache(B, h, maxLen, d, d)
			if err := c.SetChunkLen(4); err != nil {
				t.Fatal(err)
			}
			return c
		}, step, -1},
		{"KVCache.Append", func() mhalib.StepCache { c, _ := mhalib.NewKVCache(B, h, maxLen, d, d); return c }, appendAttend, -1},
		{"WindowedKVCache", func() mhalib.StepCache { c, _ := mhalib.NewWindowedKVCache(B, h, left, d, d); return c }, step, left},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
				rng := rand.New(rand.NewPCG(7, 29))
				c := tc.cache()
				exec, err := context.NewExec(backend, context.New(), func(ctx *context.Context, q, k, v, pos *Node) *Node {
					return tc.run(c, ctx.In("kv_cache"), q, k, v, pos)
				})
				if err != nil {
					t.Fatal(err)
				}
				defer exec.Finalize()
				for seq, poison := range []bool{true, false, true, false} {
					all := mhatest.Rand(rng, -1, 1, B, h, maxLen, d)
					if poison {
						all = poisoned(all)
					}
					c.Reset()
					for range maxLen - seq { // sequences of different lengths
						pos, err := c.Advance(1)
						if err != nil {
							t.Fatal(err)
						}
						k := rowsOf(all, pos, 1)
						q := mhatest.Rand(rng, -1, 1, B, Hq, 1, d)
						out, err := exec.Exec(toTensor(q, dtypes.Float64), toTensor(k, dtypes.Float64), toTensor(negated(k), dtypes.Float64), int32(pos))
						if err != nil {
							t.Fatal(err)
						}
						if poison {
							continue
						}
						spec := mhatest.AttentionSpec{Scale: 0.5, Causal: mhatest.BottomRight}
						from := 0
						if tc.window >= 0 {
							from = max(0, pos-tc.window)
						}
						keys := rowsOf(all, from, pos+1-from)
						want, _ := mhatest.Attention(q, keys, negated(keys), spec)
						assertClose(t, fmt.Sprintf("sequence %d, pos %d", seq, pos), out[0], want, 1e-12)
					}
				}
			})
		})
	}
}
