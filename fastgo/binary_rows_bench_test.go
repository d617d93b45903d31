package fastgo_test

import (
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/xla"
)

// BenchmarkBinaryRows: the two kinds of small broadcasts of a SmolLM2 decoding step — softmax's
// scores minus their rows' maxima ([1, 3, 3, 1, 128] − [1, 3, 3, 1, 1]) and RoPE's table
// products ([1, 1, 12, 64] · [1, 1, 1, 64]) — 50 of each in one graph, per op (the executor's
// whole cost, as simplego runs it one op at a time).
func BenchmarkBinaryRows(b *testing.B) {
	const ops = 100
	backend, err := simplego.New(xla.SimpleGoConfig) // one op at a time, as mhalab runs it
	if err != nil {
		b.Fatal(err)
	}
	exec := graph.MustNewExec(backend, func(s, m, x, c *graph.Node) (*graph.Node, *graph.Node) {
		for range ops / 2 {
			s = graph.Sub(s, m) // [1, 3, 3, 1, 128]
			x = graph.Mul(x, c) // [1, 1, 12, 64]
		}
		return s, x
	})
	defer exec.Finalize()
	in := []any{
		tensors.FromShape(shapes.Make(dtypes.Float32, 1, 3, 3, 1, 128)), tensors.FromShape(shapes.Make(dtypes.Float32, 1, 3, 3, 1, 1)),
		tensors.FromShape(shapes.Make(dtypes.Float32, 1, 1, 12, 64)), tensors.FromShape(shapes.Make(dtypes.Float32, 1, 1, 1, 64)),
	}
	for b.Loop() {
		for _, t := range exec.MustExec(in...) {
			t.FinalizeAll()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/ops, "ns/op-node")
}
