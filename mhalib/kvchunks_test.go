package mhalib_test

import (
	"errors"
	"fmt"
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
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// TestKVCacheStepChunks decodes with KVCache.Step in chunks of T = 1, 3, 4, 5 (the last chunk
// of 13 positions then padded) and 13 (one chunk), grouped queries (Hq 4 over 2 key/value
// heads), float64, and compares every step with attention over all positions so far (bottom-right
// causal) within 1e-12: a prompt spanning chunks then one token at a time across every chunk
// boundary to the capacity; after Reset, one token at a time from position 0 (the first steps
// of a chunk rotate the tail); then blocks that start and end inside chunks.
func TestKVCacheStepChunks(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, Hq, h, maxLen, d = 2, 4, 2, 13, 3
		for _, T := range []int{1, 3, 4, 5, 13} {
			t.Run(fmt.Sprintf("T=%d", T), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(T), 29))
				c, err := mhalib.NewKVCache(B, h, maxLen, d, d)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.SetChunkLen(T); err != nil || c.ChunkLen() != T {
					t.Fatalf("SetChunkLen(%d): %v, ChunkLen %d", T, err, c.ChunkLen())
				}
				ctx := context.New()
				exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, q, k, v, pos *Node) *Node {
					return c.Step(ctx.In("kv_cache"), q, k, v, pos, 0.5)
				})
				if err != nil {
					t.Fatal(err)
				}
				defer exec.Finalize()
				ones := func(n int) []int { return slicesRepeat(1, n) }
				plan := append(append(append([]int{5}, ones(8)...), -1), ones(13)...)
				plan = append(append(plan, -1), 2, 1, 1, 4, 1, 2, 1, 1)
				all := mhatest.Rand(rng, -1, 1, B, h, maxLen, d) // keys of every position; values: negated
				for step, n := range plan {
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
					q := mhatest.Rand(rng, -1, 1, B, Hq, n, d)
					out, err := exec.Exec(toTensor(q, dtypes.Float64), toTensor(k, dtypes.Float64), toTensor(negated(k), dtypes.Float64), int32(pos))
					if err != nil {
						t.Fatal(err)
					}
					keys := rowsOf(all, 0, pos+n)
					want, _ := mhatest.Attention(q, keys, negated(keys), mhatest.AttentionSpec{Scale: 0.5, Causal: mhatest.BottomRight})
					assertClose(t, fmt.Sprintf("step %d (pos %d, n %d)", step, pos, n), out[0], want, 1e-12)
				}
				var positions int
				for v := range ctx.IterVariables() {
					if strings.HasSuffix(v.Scope(), "/kv_cache") {
						positions += v.Shape().Dim(2)
					}
				}
				C := (maxLen + T - 1) / T
				if positions != 2*C*T {
					t.Fatalf("cache variables hold %d positions (keys and values), want 2·%d chunks·%d", positions, C, T)
				}
			})
		}
	})
}

func slicesRepeat(x, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// TestKVCacheStepWritesOnlyTheTail: a one-token step leaves the tensors of the filled chunks as
// they were (it returns only the tail), and a step that begins a chunk finds the full tail's
// tensor moved into its chunk variable by Advance — no copy of the cache.
func TestKVCacheStepWritesOnlyTheTail(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, h, maxLen, d, T = 1, 2, 12, 4, 4
		c, _ := mhalib.NewKVCache(B, h, maxLen, d, d)
		if err := c.SetChunkLen(T); err != nil {
			t.Fatal(err)
		}
		ctx := context.New()
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x, pos *Node) *Node {
			return c.Step(ctx.In("kv_cache"), x, x, x, pos, 1)
		})
		defer exec.Finalize()
		value := func(name string) *tensors.Tensor {
			v := ctx.GetVariableByScopeAndName("/kv_cache", name)
			if v == nil {
				t.Fatalf("no variable /kv_cache/%s", name)
			}
			x, err := v.Value()
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
		step := func(n int) {
			pos, err := c.Advance(n)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := exec.Exec(tensors.FromShape(shapes.Make(dtypes.Float32, B, h, n, d)), int32(pos)); err != nil {
				t.Fatal(err)
			}
		}
		step(6) // positions 0 … 5: chunk 0 in keys_0, chunk 1 in the tail
		chunk0, chunk1, tail := value("keys_0"), value("keys_1"), value("keys_tail")
		step(1) // position 6
		if value("keys_0") != chunk0 || value("keys_1") != chunk1 {
			t.Fatal("a one-token step replaced a filled chunk's tensor")
		}
		if value("keys_tail") == tail {
			t.Fatal("a one-token step left the tail's tensor as it was")
		}
		step(1) // position 7: the tail is full
		full := value("keys_tail")
		step(1) // position 8 begins chunk 2: Advance moved the tail into keys_1
		if value("keys_1") != full || value("keys_0") != chunk0 {
			t.Fatal("Advance did not move the full tail's tensor into keys_1")
		}
	})
}

// TestKVCacheSetChunkLenErrors: out of range, or after Step made the variables.
func TestKVCacheSetChunkLenErrors(t *testing.T) {
	c, _ := mhalib.NewKVCache(1, 1, 8, 2, 2)
	for _, T := range []int{0, 9} {
		if err := c.SetChunkLen(T); !errors.Is(err, mhalib.ErrInvalidArgument) {
			t.Errorf("SetChunkLen(%d): %v, want ErrInvalidArgument", T, err)
		}
	}
	if big, _ := mhalib.NewKVCache(1, 1, 4096, 2, 2); big.ChunkLen() != 256 {
		t.Errorf("default ChunkLen for 4096 positions = %d, want 256 (16 chunks)", big.ChunkLen())
	}
	backend, err := backendtest.Get("go")
	if err != nil {
		t.Skip(err)
	}
	ctx := context.New()
	exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x, pos *Node) *Node {
		return c.Step(ctx, x, x, x, pos, 1)
	})
	defer exec.Finalize()
	if _, err := exec.Exec(tensors.FromShape(shapes.Make(dtypes.Float32, 1, 1, 1, 2)), int32(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetChunkLen(4); !errors.Is(err, mhalib.ErrInvalidArgument) || !strings.Contains(err.Error(), "already") {
		t.Errorf("SetChunkLen after a step: %v, want ErrInvalidArgument naming the variables", err)
	}
}
