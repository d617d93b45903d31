package fastgo_test

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/mhalib"
)

// BenchmarkMHA runs mhalib's self-attention forward pass on the shapes of mhalab bench's seed003
// (B32 L128 E512 h8), long (B1 L4096 E512 h8, Auto: flash) and llm (B8 L1024 E768 h12, Auto:
// flash) cases, plain and causal, on the pure-Go backend with
// fastgo. It is the entry point for a CPU profile of the whole layer:
//
//	GOEXPERIMENT=simd go test ./fastgo -run NONE -bench MHA/long -cpuprofile /tmp/cpu.out
//
// The backend is configured as mhalab bench configures it ("ops_sequential"); MHALAB_SIMPLEGO
// sets another configuration (BenchmarkKVDecode). MHALAB_OPPROF=1 prints the elapsed time per op type and shape per call (decode_opprof_test.go).
// MHALAB_FASTGO_VEC and MHALAB_FASTGO_AB alternate vector levels or a tuning knob in one run
// (fastgo.VecLoop), as in BenchmarkKVDecode.
func BenchmarkMHA(b *testing.B) {
	for _, c := range []struct {
		name        string
		batch, l, e int
		heads       int
		causal      bool
	}{
		{"seed003", 32, 128, 512, 8, false},
		{"seed003_causal", 32, 128, 512, 8, true},
		{"long", 1, 4096, 512, 8, false},
		{"long_causal", 1, 4096, 512, 8, true},
		{"llm", 8, 1024, 768, 12, false},
		{"llm_causal", 8, 1024, 768, 12, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			backend := benchBackend(b)
			causal := mhalib.NoCausal
			if c.causal {
				causal = mhalib.CausalTopLeft
			}
			ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
			exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *graph.Node) *graph.Node {
				return mhalib.MultiHeadAttention(ctx, x, x, x, c.heads).Causal(causal).Done() // [B, L, E]
			})
			x := randomTensor(rand.New(rand.NewPCG(1, 2)), dtypes.Float32, []int{c.batch, c.l, c.e})
			exec.MustExec(x)[0].FinalizeAll()
			b.ResetTimer()
			start := cpuMS()
			if os.Getenv("MHALAB_OPPROF") != "" {
				fastgo.OpProfileStart()
				defer func() { fastgo.OpProfileReport(os.Stdout, b.N) }()
			}
			fastgo.VecLoop(b, func(int) { exec.MustExec(x)[0].FinalizeAll() })
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
			reportCPU(b, start)
		})
	}
}
