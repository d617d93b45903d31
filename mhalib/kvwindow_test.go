package mhalib_test

import (
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
	"github.com/mhalab/mhalab/mhalib/kvcatalog"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// posRows returns positions [from, from+n) of x [B, H, L, d] as [B, H, n, d].
func posRows(x *mhatest.Tensor, from, n int) *mhatest.Tensor {
	B, H, d := x.Shape[0], x.Shape[1], x.Shape[3]
	out := mhatest.New(B, H, n, d)
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for i := 0; i < n; i++ {
				for e := 0; e < d; e++ {
					out.Set(x.At(b, h, from+i, e), b, h, i, e)
				}
			}
		}
	}
	return out
}

// cacheBytes sums the bytes of the cache variables under scope.
func cacheBytes(ctx *context.Context, scope string) int64 {
	var n int64
	for v := range ctx.IterVariables() {
		if strings.HasSuffix(v.Scope(), scope) {
			n += int64(v.Shape().Memory())
		}
	}
	return n
}

// Decoding 4× the window (left 3, ring of 4 slots) with GQA, in steps of 1 and a prefill of 6
// (longer than the ring): every step equals sliding-window causal attention over the whole
// sequence, and the ring's memory stays 4 slots (measured: the variables' bytes).
func TestWindowedKVCache(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, Hq, Hkv, d, left = 2, 4, 2, 3, 3
		steps := []int{6, 1, 1, 1, 2, 1, 1, 1, 1, 1} // 16 positions = 4 × (left+1)
		L := 0
		for _, n := range steps {
			L += n
		}
		rng := rand.New(rand.NewPCG(23, 1))
		q := mhatest.Rand(rng, -1, 1, B, Hq, L, d)
		k := mhatest.Rand(rng, -1, 1, B, Hkv, L, d)
		v := mhatest.Rand(rng, -1, 1, B, Hkv, L, d)
		want, _ := mhatest.Attention(q, k, v, mhatest.AttentionSpec{Scale: 0.7, Causal: mhatest.TopLeft, Window: &mhatest.Window{Left: left, Right: -1}})
		cache, err := mhalib.NewWindowedKVCache(B, Hkv, left, d, d)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.New()
		execs := map[int]*context.Exec{}
		dt := dtypes.Float64
		for _, n := range steps {
			pos, _ := cache.Advance(n)
			if execs[n] == nil {
				execs[n] = context.MustNewExec(backend, ctx, func(ctx *context.Context, q, k, v, pos *Node) *Node {
					return cache.Step(ctx.In("ring"), q, k, v, pos, 0.7)
				})
			}
			res, err := execs[n].Exec(toTensor(posRows(q, pos, n), dt), toTensor(posRows(k, pos, n), dt), toTensor(posRows(v, pos, n), dt), tensors.FromScalar(int32(pos)))
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, fmt.Sprintf("step at %d (n=%d)", pos, n), res[0], posRows(want, pos, n), 1e-12)
			got := cacheBytes(ctx, "/ring")
			wantBytes, _ := kvcatalog.Bytes(kvcatalog.Config{Layers: 1, KVHeads: Hkv, HeadDim: d, Context: cache.Len(),
				Batch: B, DType: dt, LocalLayers: 1, Window: cache.Slots()})
			if cache.Len() >= cache.Slots() && got != wantBytes {
				t.Fatalf("after %d positions the ring holds %d bytes, want %d (%d slots)", cache.Len(), got, wantBytes, cache.Slots())
			}
		}
		if got := cacheBytes(ctx, "/ring"); got != int64(2*B*Hkv*(left+1)*d*8) {
			t.Fatalf("ring memory %d bytes after %d positions, want %d", got, L, 2*B*Hkv*(left+1)*d*8)
		}
	})
}

// GQA shrinks the KV cache by Hq/Hkv: measured as the bytes of the cache variables a
// CachedSelfAttention-style step allocates (KVCache.Append + Attend with 8 query heads over 8, 2
// and 1 key/value heads), and the outputs equal the reference.
func TestKVCacheGQAMemory(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, Hq, L, d = 1, 8, 6, 4
		rng := rand.New(rand.NewPCG(23, 2))
		q := mhatest.Rand(rng, -1, 1, B, Hq, L, d)
		mha := int64(0)
		for _, hkv := range []int{8, 2, 1} {
			k := mhatest.Rand(rng, -1, 1, B, hkv, L, d)
			v := mhatest.Rand(rng, -1, 1, B, hkv, L, d)
			want, _ := mhatest.Attention(q, k, v, mhatest.AttentionSpec{Causal: mhatest.TopLeft})
			cache, _ := mhalib.NewKVCache(B, hkv, L, d, d)
			ctx := context.New()
			exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, q, k, v, pos *Node) *Node {
				keys, values := cache.Append(ctx.In("kv"), k, v, pos)
				return cache.Attend(q, keys, values, pos, 0.5)
			})
			res, err := exec.Exec(toTensor(q, dtypes.Float64), toTensor(k, dtypes.Float64), toTensor(v, dtypes.Float64), tensors.FromScalar(int32(0)))
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, fmt.Sprintf("Hkv=%d", hkv), res[0], want, 1e-12)
			got := cacheBytes(ctx, "/kv")
			if hkv == Hq {
				mha = got
			} else if got*int64(Hq/hkv) != mha {
				t.Fatalf("Hkv=%d: cache %d bytes, want MHA's %d / %d", hkv, got, mha, Hq/hkv)
			}
			t.Logf("Hq=%d, Hkv=%d: KV cache %d bytes", Hq, hkv, got)
		}
	})
}
