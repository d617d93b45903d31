package mhalib_test

import (
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
)

// BenchmarkForward times the forward pass of self-attention at the seed shape
// B=32, L=128, D=512, h=8 (float32, compiled once outside the timing), on each backend:
//
//	go test -bench . -run '^$' ./mhalib/
func BenchmarkForward(b *testing.B) {
	const B, L, D, h = 32, 128, 512, 8
	names, missing := backendtest.Available() // honours MHALAB_TEST_BACKENDS
	for name, err := range missing {
		b.Run(name, func(b *testing.B) { b.Skipf("backend %s unavailable: %v", name, err) })
	}
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			backend, err := backendtest.Get(name)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.New()
			ctx.SetParam(context.ParamInitialSeed, int64(1))
			exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) *Node {
				return mhalib.MultiHeadAttention(ctx, x, x, x, h).Done()
			})
			x := ramp(B, L, D)
			if err := exec.PreCompile(x); err != nil {
				b.Fatal(err)
			}
			exec.MustExec(x)[0].FinalizeAll() // initialise the variables, warm up
			b.ResetTimer()
			for b.Loop() {
				exec.MustExec(x)[0].FinalizeAll()
			}
		})
	}
}
