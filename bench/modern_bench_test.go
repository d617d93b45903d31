package bench

import (
	"fmt"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
)

// BenchmarkModernDecode times one decoding step of the modern suite's model (4 layers, E 2048,
// Hq 32, a cache of 4096 positions, float32) with 32, 8 and 1 key/value heads, at the cache's
// last positions as the suite does, with fastgo on the pure-Go backend (this package links it,
// as the command does). For profiles:
//
//	MHALAB_TEST_BACKENDS=go go test -bench ModernDecode/Hkv=32 -run '^$' -cpuprofile /tmp/cpu.out ./bench/
func BenchmarkModernDecode(b *testing.B) {
	m := modernConfig(false).decode
	dk := m.Embed / m.Heads
	names, _ := backendtest.Available()
	for _, name := range names {
		for _, hkv := range []int{32, 8, 1} {
			b.Run(fmt.Sprintf("%s/Hkv=%d", name, hkv), func(b *testing.B) {
				backend, err := backendtest.Get(name)
				if err != nil {
					b.Fatal(err)
				}
				cache, err := mhalib.NewKVCache(1, hkv, m.Context, dk, dk)
				if err != nil {
					b.Fatal(err)
				}
				ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
				ctx.SetParam(context.ParamInitialSeed, int64(1))
				step := context.MustNewExec(backend, ctx, func(ctx *context.Context, x, pos *graph.Node) *graph.Node {
					return gqaLayers(ctx, m, hkv, cache, x, pos) // [1, 1, E]
				})
				defer step.Finalize()
				x := uniformTensor(21, 1, 1, m.Embed)
				first := m.Context - m.Steps
				run := func(i int) {
					pos := first + i%m.Steps // the positions the suite times (no cache.Advance: the data are not checked here)
					out, err := step.Exec(x, int32(pos))
					if err != nil {
						b.Fatal(err)
					}
					_ = finalizeAll(out)
				}
				run(0)
				b.ResetTimer()
				i := 1
				for b.Loop() {
					run(i)
					i++
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
