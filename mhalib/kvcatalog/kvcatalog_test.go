package kvcatalog_test

import (
	"errors"
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
	"github.com/mhalab/mhalab/mhalib/kvcatalog"
)

// The figures cited in issue 13: a 4096-wide, 32-layer, 32-head model at 32k context in bf16
// caches 17.18 GB with MHA and 4.29 GB with 8 KV heads (2·32·h·128·32768·2 bytes).
func TestKVCacheBytesCitedFigures(t *testing.T) {
	for _, c := range []struct {
		kvHeads int
		want    int64
	}{{32, 17_179_869_184}, {8, 4_294_967_296}} {
		got, err := kvcatalog.Bytes(kvcatalog.Config{Layers: 32, KVHeads: c.kvHeads, HeadDim: 128, Context: 32768})
		if err != nil || got != c.want {
			t.Errorf("%d KV heads: %d bytes (%v), want %d", c.kvHeads, got, err, c.want)
		}
	}
}

// Every published configuration, at 8192 positions in bf16 (sizes are products of the
// config.json numbers given in each Source; see Published).
func TestPublishedKVCacheConfigs(t *testing.T) {
	want := map[string]int64{
		"Llama-3-8B (GQA, 8 KV heads)":             2 * 32 * 8 * 128 * 8192 * 2,            // 1 GiB
		"Llama-3-8B as MHA (32 KV heads)":          2 * 32 * 32 * 128 * 8192 * 2,           // 4 GiB
		"Gemma-3-27B (52 local w1024 + 10 global)": 2 * 16 * 128 * (10*8192 + 52*1024) * 2, //
		"Gemma-3-27B all global":                   2 * 16 * 128 * 62 * 8192 * 2,           //
		"SmolLM2-135M (GQA, 3 KV heads)":           2 * 30 * 3 * 64 * 8192 * 2,             //
		"DeepSeek-V2-Lite (MLA, 512+64)":           27 * (512 + 64) * 8192 * 2,             //
		"DeepSeek-V2-Lite as MHA (16 heads)":       27 * 16 * (192 + 128) * 8192 * 2,       //
	}
	configs := kvcatalog.Published()
	if len(configs) != len(want) {
		t.Fatalf("%d configurations, want %d", len(configs), len(want))
	}
	for _, c := range configs {
		c.Context = 8192
		got, err := kvcatalog.Bytes(c)
		if err != nil || got != want[c.Model] {
			t.Errorf("%s: %d bytes (%v), want %d", c.Model, got, err, want[c.Model])
		}
		if c.Source == "" {
			t.Errorf("%s: no source", c.Model)
		}
	}
	// A sliding-window layer stops growing at its window.
	g := configs[2]
	g.Context = 1024
	at1k, _ := kvcatalog.Bytes(g)
	g.Context = 2048
	at2k, _ := kvcatalog.Bytes(g)
	if at2k-at1k != 10*2*16*128*1024*2 {
		t.Errorf("Gemma 3 from 1k to 2k positions grows by %d bytes, want only the 10 global layers' %d", at2k-at1k, 10*2*16*128*1024*2)
	}
}

func TestKVCacheBytesErrors(t *testing.T) {
	for _, c := range []kvcatalog.Config{
		{Layers: 0, KVHeads: 1, HeadDim: 1},
		{Layers: 2, KVHeads: 0, HeadDim: 1},
		{Layers: 2, KVHeads: 1, HeadDim: 1, LocalLayers: 3, Window: 4},
		{Layers: 2, KVHeads: 1, HeadDim: 1, LocalLayers: 1},
		{Layers: 2, KVHeads: 1, HeadDim: 1, Context: -1},
	} {
		if _, err := kvcatalog.Bytes(c); !errors.Is(err, mhalib.ErrInvalidArgument) {
			t.Errorf("%+v: err = %v, want ErrInvalidArgument", c, err)
		}
	}
}

// Bytes is what mhalib.KVCache really allocates: the cache variables CachedSelfAttention creates
// (one layer, float32, capacity maxLen) hold exactly Bytes bytes.
func TestKVCacheBytesMatchesAllocated(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, maxLen, E, h = 2, 16, 12, 3
		cache, err := mhalib.NewKVCache(B, h, maxLen, E/h, E/h)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.New()
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x, pos *Node) *Node {
			return mhalib.CachedSelfAttention(ctx, x, h, cache, pos).Done()
		})
		if _, err := exec.Exec(tensors.FromShape(shapes.Make(dtypes.Float32, B, 1, E)), tensors.FromScalar(int32(0))); err != nil {
			t.Fatal(err)
		}
		var allocated int64
		for v := range ctx.IterVariables() {
			if strings.HasSuffix(v.Scope(), "/kv_cache") {
				allocated += int64(v.Shape().Memory())
			}
		}
		want, _ := kvcatalog.Bytes(kvcatalog.Config{Layers: 1, KVHeads: h, HeadDim: E / h, Context: maxLen, Batch: B, DType: dtypes.Float32})
		if allocated != want {
			t.Fatalf("cache variables hold %d bytes, Bytes says %d", allocated, want)
		}
	})
}

func TestMain(m *testing.M) { backendtest.Main(m, "mhalib/kvcatalog") }
