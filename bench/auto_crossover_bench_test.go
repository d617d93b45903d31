package bench

import (
	"fmt"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
)

// BenchmarkAutoCrossover times MultiHeadAttention's forward pass without a causal mask with
// plain (HeadParallel) and Flash attention at the llm group's width (B 8, E 768, h 12) for
// sequence lengths around the Auto rule's threshold (mhalib/auto.go), on each backend, the
// formulations alternated by -count:
//
//	MHALAB_TEST_BACKENDS=go,xla:cpu go test -bench AutoCrossover -run '^$' -count 3 ./bench/
func BenchmarkAutoCrossover(b *testing.B) {
	const B, E, h = 8, 768, 12
	names, _ := backendtest.Available()
	for _, name := range names {
		for _, L := range []int{1024, 1536, 2048} {
			for _, f := range []mhalib.Formulation{mhalib.HeadParallel, mhalib.Flash} {
				b.Run(fmt.Sprintf("%s/L=%d/%s", name, L, f), func(b *testing.B) {
					backend, err := backendtest.Get(name)
					if err != nil {
						b.Fatal(err)
					}
					ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
					ctx.SetParam(context.ParamInitialSeed, int64(1))
					exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *graph.Node) *graph.Node {
						return mhalib.MultiHeadAttention(ctx, x, x, x, h).Formulation(f).Done() // [B, L, E]
					})
					defer exec.Finalize()
					x := uniformTensor(3, B, L, E)
					_ = finalizeAll(exec.MustExec(x))
					b.ResetTimer()
					for b.Loop() {
						_ = finalizeAll(exec.MustExec(x))
					}
				})
			}
		}
	}
}
