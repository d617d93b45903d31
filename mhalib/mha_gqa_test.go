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
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// MultiHeadAttention with KVHeads (GQA and MQA) against the float64 reference: projections with
// k/v of Hkv·dk features, mhatest.Attention with grouped heads, output projection; plain and
// flash formulations, causal, gradient of the query input; both backends.
func TestMHAKVHeads(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, Lq, Lk, E, H, kdim = 2, 4, 5, 12, 6, 7
		for _, hkv := range []int{2, 1, 3} {
			for _, f := range []mhalib.Formulation{mhalib.HeadParallel, mhalib.Flash} {
				name := fmt.Sprintf("Hkv=%d/%s", hkv, f)
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seedOf(name), 29))
					w := hkv * (E / H) // k/v features: Hkv·dk
					wq, wk, wv := mhatest.Rand(rng, -0.5, 0.5, E, E), mhatest.Rand(rng, -0.5, 0.5, w, kdim), mhatest.Rand(rng, -0.5, 0.5, w, kdim)
					wo, bo := mhatest.Rand(rng, -0.5, 0.5, E, E), mhatest.Rand(rng, -0.5, 0.5, E)
					bias := mhatest.Rand(rng, -0.5, 0.5, E+2*w)
					query, kv := mhatest.Rand(rng, -1, 1, B, Lq, E), mhatest.Rand(rng, -1, 1, B, Lk, kdim)
					cot := mhatest.Rand(rng, -1, 1, B, Lq, E)
					seg := func(from, n int) *mhatest.Tensor { return mhatest.FromFloat64(bias.Data[from:from+n], n) }
					ref := func() *mhatest.Tensor {
						q := mhatest.SplitHeadsBL(mhatest.Linear(query, wq, seg(0, E)), H)
						k := mhatest.SplitHeadsBL(mhatest.Linear(kv, wk, seg(E, w)), hkv)
						v := mhatest.SplitHeadsBL(mhatest.Linear(kv, wv, seg(E+w, w)), hkv)
						o, _ := mhatest.Attention(q, k, v, mhatest.AttentionSpec{Causal: mhatest.BottomRight})
						return mhatest.Linear(mhatest.MergeHeadsBL(o), wo, bo)
					}
					dt := dtypes.Float64
					ctx := context.New()
					s := ctx.In(mhalib.DefaultScope)
					s.VariableWithValue(mhalib.VarQProjWeight, toTensor(wq, dt))
					s.VariableWithValue(mhalib.VarKProjWeight, toTensor(wk, dt))
					s.VariableWithValue(mhalib.VarVProjWeight, toTensor(wv, dt))
					s.VariableWithValue(mhalib.VarInProjBias, toTensor(bias, dt))
					s.In(mhalib.ScopeOutProj).VariableWithValue("weight", toTensor(wo, dt))
					s.In(mhalib.ScopeOutProj).VariableWithValue("bias", toTensor(bo, dt))
					exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, q, kv, cot *Node) []*Node {
						out := mhalib.MultiHeadAttention(ctx, q, kv, kv, H).KVHeads(hkv).Causal(mhalib.CausalBottomRight).Formulation(f).Done()
						return []*Node{out, Gradient(ReduceAllSum(Mul(out, cot)), q)[0]}
					})
					res, err := exec.Exec(toTensor(query, dt), toTensor(kv, dt), toTensor(cot, dt))
					if err != nil {
						t.Fatal(err)
					}
					assertClose(t, "output", res[0], ref(), 1e-12)
					loss := func() float64 { return mhatest.Loss(ref(), cot) }
					assertClose(t, "gradient", res[1], mhatest.NumGrad(loss, query, 1e-6), 1e-8)
				})
			}
		}
	})
}

func TestMHAKVHeadsErrors(t *testing.T) {
	x := zeros(dtypes.Float32, 1, 3, 12)
	for _, c := range []struct {
		name string
		fn   func(b *mhalib.MHABuilder)
		want string
	}{
		{"not a divisor", func(b *mhalib.MHABuilder) { b.KVHeads(4) }, "does not divide the 6 query heads"},
		{"uneven heads", func(b *mhalib.MHABuilder) { b.KVHeads(2).HeadSizes(2, 2, 2, 2, 2, 2) }, "heads of equal size"},
		{"per-head loop", func(b *mhalib.MHABuilder) { b.KVHeads(2).Formulation(mhalib.PerHeadLoop) }, "HeadParallel"},
		{"bias_kv", func(b *mhalib.MHABuilder) { b.KVHeads(2).AddBiasKV(true) }, "add_bias_kv"},
		{"fused", func(b *mhalib.MHABuilder) { b.KVHeads(2).SeparateProjections(false) }, "separate projections"},
	} {
		_, err := context.MustNewExec(goBackend(), context.New(), func(ctx *context.Context, x *Node) *Node {
			b := mhalib.MultiHeadAttention(ctx, x, x, x, 6)
			c.fn(b)
			return b.Done()
		}).Exec(x)
		var ae *mhalib.ArgumentError
		if !errors.As(err, &ae) || ae.Arg != "KVHeads" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want a KVHeads error containing %q", c.name, err, c.want)
		}
	}
}

// Decoding with CachedSelfAttention(...).KVHeads(2) (6 query heads, a cache of 2 key/value heads)
// gives the rows of MultiHeadAttention(...).KVHeads(2).Causal(CausalTopLeft) over the whole
// sequence, with the same variables.
func TestCachedSelfAttentionKVHeads(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, L, E, H, hkv = 2, 7, 12, 6, 2
		rng := rand.New(rand.NewPCG(31, 1))
		x := mhatest.Rand(rng, -1, 1, B, L, E)
		dt := dtypes.Float64
		ctx := context.New()
		ctx.SetRNGStateFromSeed(3)
		full := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) *Node {
			return mhalib.MultiHeadAttention(ctx, x, x, x, H).KVHeads(hkv).Causal(mhalib.CausalTopLeft).Done()
		})
		wantT, err := full.Exec(toTensor(x, dt))
		if err != nil {
			t.Fatal(err)
		}
		want := fromTensor(t, wantT[0])
		cache, _ := mhalib.NewKVCache(B, hkv, L, E/H, E/H)
		execs := map[int]*context.Exec{}
		for _, n := range []int{3, 1, 1, 2} {
			pos, _ := cache.Advance(n)
			if execs[n] == nil {
				execs[n] = context.MustNewExec(backend, ctx, func(ctx *context.Context, x, pos *Node) *Node {
					return mhalib.CachedSelfAttention(ctx, x, H, cache, pos).KVHeads(hkv).Done()
				})
			}
			rows, wantRows := mhatest.New(B, n, E), mhatest.New(B, n, E)
			for b := 0; b < B; b++ {
				for i := 0; i < n; i++ {
					for e := 0; e < E; e++ {
						rows.Set(x.At(b, pos+i, e), b, i, e)
						wantRows.Set(want.At(b, pos+i, e), b, i, e)
					}
				}
			}
			res, err := execs[n].Exec(toTensor(rows, dt), tensors.FromScalar(int32(pos)))
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, fmt.Sprintf("step at %d", pos), res[0], wantRows, 1e-12)
		}
		if got, want := cacheBytes(ctx, "/kv_cache"), int64(2*B*hkv*L*(E/H)*8); got != want {
			t.Fatalf("cache holds %d bytes, want %d (2 KV heads)", got, want)
		}
	})
}
