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
	"github.com/gomlx/gomlx/pkg/core/shapes"
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

// TestCachedSelfAttentionStepCopiesNoWeight: a one-token step with the fused in_proj_weight
// [3E, E] multiplies the weight where it lies — no node of the step's graph but the parameters
// (variables and inputs) holds E·E values or more. On the pure-Go backend the weight used to be
// cut in Wq, Wk, Wv first, per step: a Reshape copying the whole weight, then three Gathers.
func TestCachedSelfAttentionStepCopiesNoWeight(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, L, E, h = 1, 4, 64, 4
		cache, err := mhalib.NewKVCache(B, h, L, E/h, E/h)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.New()
		exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, x, pos *Node) *Node {
			return mhalib.CachedSelfAttention(ctx, x, h, cache, pos).Done() // [B, 1, E]
		})
		if err != nil {
			t.Fatal(err)
		}
		defer exec.Finalize()
		out, g, err := exec.ExecWithGraph(tensors.FromShape(shapes.Make(dtypes.Float32, B, 1, E)), int32(0))
		if err != nil {
			t.Fatal(err)
		}
		out[0].FinalizeAll()
		if ctx.GetVariableByScopeAndName("/"+mhalib.DefaultScope, mhalib.VarInProjWeight) == nil {
			t.Fatalf("no fused %s variable: the test does not test the fused weight", mhalib.VarInProjWeight)
		}
		for _, n := range g.Nodes() {
			if n.Type() != NodeTypeParameter && n.Shape().Size() >= E*E {
				t.Errorf("node %s holds %d ≥ E·E = %d values: the step copies a weight", n, n.Shape().Size(), E*E)
			}
		}
	})
}
