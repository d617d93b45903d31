package parallel_test

import (
	"fmt"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/parallel"
	"github.com/mhalab/mhalab/xla"
)

// readCollectives compiles fn for n devices (SPMD) with per-device inputs of the given shapes
// and returns the all-reduces XLA's optimised program holds.
func readCollectives(t *testing.T, n int, fn func(ctx *context.Context, in []*Node) []*Node, inputs ...shapes.Shape) []xla.Collective {
	t.Helper()
	backend := cpuDevices(t)
	if hloDumpErr != nil {
		t.Fatalf("xla.EnableHLODump: %v", hloDumpErr)
	}
	mesh, err := parallel.Mesh(n)
	if err != nil {
		t.Fatal(err)
	}
	dump, err := xla.OptimizedHLOFor(backend, nil, fn, &xla.Distribution{Mesh: mesh}, inputs...)
	if err != nil {
		t.Fatal(err)
	}
	return xla.Collectives(dump.After)
}

func sumBytes(cs []xla.Collective) (n int64) {
	for _, c := range cs {
		n += c.Bytes
	}
	return n
}

// TestCollectiveBytesMatchTheProgram compares the bytes computed from shapes with the
// all-reduces of the compiled programs, forward and backward, on 2 and 4 devices.
func TestCollectiveBytesMatchTheProgram(t *testing.T) {
	f32 := func(dims ...int) shapes.Shape { return shapes.Make(dtypes.Float32, dims...) }
	for _, n := range []int{2, 4} {
		local := hHeads / n
		dk := hE / hHeads
		t.Run(fmt.Sprintf("heads/%d-devices", n), func(t *testing.T) {
			got := readCollectives(t, n, func(_ *context.Context, in []*Node) []*Node {
				w := parallel.HeadWeights{Wq: in[2], Wk: in[3], Wv: in[4], Wo: in[5]}
				y, g := parallel.HeadParallelGradients(in[0], w, local, mhalib.NoCausal, in[1])
				return []*Node{y, g.Dx, g.DWq, g.DWk, g.DWv, g.DWo}
			}, f32(hB, hL, hE), f32(hB, hL, hE), f32(local*dk, hE), f32(local*dk, hE), f32(local*dk, hE), f32(hE, local*dk))
			want := parallel.TotalBytes(parallel.HeadParallelMessages(hB, hL, hE, 4, true))
			if b := sumBytes(got); b != want {
				t.Errorf("all-reduce bytes in the program %d, computed %d (%v)", b, want, got)
			}
			t.Logf("computed %d B, program %v", want, got)
		})
		t.Run(fmt.Sprintf("sequence/%d-devices", n), func(t *testing.T) {
			got := readCollectives(t, n, func(_ *context.Context, in []*Node) []*Node {
				out, dq, dk, dv := parallel.SequenceParallelGradients(in[0], in[1], in[2], parallel.DefaultScale(sD), true, in[3], in[4])
				return []*Node{out, dq, dk, dv}
			}, f32(sB, sH, sLq, sD), f32(sB, sH, sLk/n, sD), f32(sB, sH, sLk/n, sD), shapes.Make(dtypes.Int32), f32(sB, sH, sLq, sD))
			want := parallel.TotalBytes(parallel.SequenceParallelMessages(sB, sH, sLq, sD, sD, 4, true))
			if b := sumBytes(got); b != want {
				t.Errorf("all-reduce bytes in the program %d, computed %d (%v)", b, want, got)
			}
			t.Logf("computed %d B, program %v", want, got)
		})
	}
}
