package mhalib_test

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
)

// BenchmarkFlashWindow times FlashAttention at L = 8192 (B 1, h 4, dk 64, float32, blocks 512×128)
// causal, and causal with a sliding window of 512 keys (Window(512, 0)), whose skipped tiles
// should make it several times faster; compiled outside the timing:
//
//	MHALAB_TEST_BACKENDS=xla:cpu go test -bench FlashWindow -run '^$' -benchtime 3x ./mhalib/
func BenchmarkFlashWindow(b *testing.B) {
	const B, h, L, dk = 1, 4, 8192, 64
	names, _ := backendtest.Available()
	for _, name := range names {
		for _, window := range []int{0, 512} {
			b.Run(fmt.Sprintf("%s/window=%d", name, window), func(b *testing.B) {
				backend, err := backendtest.Get(name)
				if err != nil {
					b.Fatal(err)
				}
				exec := MustNewExec(backend, func(q *Node) *Node {
					f := mhalib.FlashAttention(q, q, q).Causal(mhalib.CausalTopLeft)
					if window > 0 {
						f.Window(window, 0, mhalib.AlignTopLeft)
					}
					return f.Done()
				})
				q := ramp(B, h, L, dk)
				if err := exec.PreCompile(q); err != nil {
					b.Fatal(err)
				}
				exec.MustExec(q)[0].FinalizeAll()
				b.ResetTimer()
				for b.Loop() {
					exec.MustExec(q)[0].FinalizeAll()
				}
			})
		}
	}
}

// BenchmarkDecodeGQA times one decoding step (1 new token attending over a KV cache of 4096
// positions, B 1, 32 query heads of 128: Llama-3-8B's attention shape, float32) with 32 key/value
// heads (MHA) and with 8 (GQA): the step reads Hkv/Hq of the cache.
//
//	MHALAB_TEST_BACKENDS=xla:cpu go test -bench DecodeGQA -run '^$' ./mhalib/
func BenchmarkDecodeGQA(b *testing.B) {
	const B, Hq, L, dk = 1, 32, 4096, 128
	names, _ := backendtest.Available()
	for _, name := range names {
		for _, hkv := range []int{32, 8} {
			b.Run(fmt.Sprintf("%s/Hkv=%d", name, hkv), func(b *testing.B) {
				backend, err := backendtest.Get(name)
				if err != nil {
					b.Fatal(err)
				}
				cache, _ := mhalib.NewKVCache(B, hkv, L, dk, dk)
				ctx := context.New()
				exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, q, k, v, pos *Node) *Node {
					keys, values := cache.Append(ctx.In("kv"), k, v, pos)
					return cache.Attend(q, keys, values, pos, 0.088)
				})
				q, k, v := ramp(B, Hq, 1, dk), ramp(B, hkv, 1, dk), ramp(B, hkv, 1, dk)
				pos := tensors.FromScalar(int32(L - 1))
				exec.MustExec(q, k, v, pos)[0].FinalizeAll()
				b.ResetTimer()
				for b.Loop() {
					exec.MustExec(q, k, v, pos)[0].FinalizeAll()
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
