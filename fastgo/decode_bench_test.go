package fastgo_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/mhalib"
)

// BenchmarkKVDecode is the decoding step of mhalab bench's modern suite on the pure-Go backend
// with fastgo: 4 pre-LN layers (LayerNorm, CachedSelfAttention), width E 2048, 32 query heads
// of 64, a KVCache of 4096 positions with 32, 8 and 1 key/value heads, one token per step at
// position 4064 (the cache nearly full, as the bench times it). The entry point for a profile:
//
//	GOEXPERIMENT=simd go test ./fastgo -run NONE -bench KVDecode/Hkv=32 -cpuprofile /tmp/cpu.out
//
// MHALAB_KVCHUNK=T sets the cache's chunk length (KVCache.SetChunkLen; default 256 here).
// GODEBUG=asyncpreemptoff=1 keeps runtime.asyncPreempt from taking a third of the profile's
// samples (it is charged for the loops it interrupts). MHALAB_FASTGO_VEC=avx2,go alternates the
// vector modes of fastgo's gemv/groupRows kernels in one run (fastgo.VecLoop; the GEMM's micro-kernel
// is the CPU's in every mode). The backend is configured as mhalab bench configures it
// ("ops_sequential", xla.SimpleGoConfig: one op at a time, each on every core); MHALAB_SIMPLEGO
// sets another configuration ("" or "ops_parallel": GoMLX's default, independent ops side by
// side). MHALAB_OPPROF=1 prints the elapsed time per op type and shape per step
// (decode_opprof_test.go); MHALAB_FASTGO_AB=knob=v1,v2 alternates a tuning knob
// (gemv_vec_test.go).
func BenchmarkKVDecode(b *testing.B) {
	const layers, E, Hq, L, pos = 4, 2048, 32, 4096, 4064
	for _, hkv := range []int{32, 8, 1} {
		b.Run(fmt.Sprintf("Hkv=%d", hkv), func(b *testing.B) {
			backend := benchBackend(b)
			cache, err := mhalib.NewKVCache(1, hkv, L, E/Hq, E/Hq)
			if err != nil {
				b.Fatal(err)
			}
			if T, _ := strconv.Atoi(os.Getenv("MHALAB_KVCHUNK")); T > 0 {
				if err := cache.SetChunkLen(T); err != nil {
					b.Fatal(err)
				}
			}
			ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
			exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x, p *graph.Node) *graph.Node {
				for i := range layers {
					lctx := ctx.In(fmt.Sprintf("layer_%d", i))
					normed := mhalib.LayerNorm(lctx.In("norm"), x, mhalib.LayerNormEps)                          // [1, 1, E]
					x = graph.Add(x, mhalib.CachedSelfAttention(lctx, normed, Hq, cache, p).KVHeads(hkv).Done()) // [1, 1, E]
				}
				return x
			})
			x := randomTensor(rand.New(rand.NewPCG(1, 2)), dtypes.Float32, []int{1, 1, E})
			at := tensors.FromScalar(int32(pos))
			exec.MustExec(x, at)[0].FinalizeAll()
			b.ResetTimer()
			start := cpuMS()
			steps := 0
			if os.Getenv("MHALAB_OPPROF") != "" {
				fastgo.OpProfileStart()
				defer func() { fastgo.OpProfileReport(os.Stdout, max(steps, 1)) }()
			}
			fastgo.VecLoop(b, func(int) { exec.MustExec(x, at)[0].FinalizeAll(); steps++ })
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			reportCPU(b, start)
		})
	}
}

// benchBackend is the pure-Go backend as mhalab bench configures it ("ops_sequential",
// xla.SimpleGoConfig), or as MHALAB_SIMPLEGO sets it ("" or "ops_parallel": GoMLX's default).
func benchBackend(b *testing.B) backends.Backend {
	config, ok := os.LookupEnv("MHALAB_SIMPLEGO")
	if !ok {
		config = "ops_sequential"
	}
	backend, err := simplego.New(config)
	if err != nil {
		b.Fatal(err)
	}
	return backend
}
