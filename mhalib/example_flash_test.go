package mhalib_test

import (
	"fmt"
	"math"
	"sync"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/mhalib"
)

// sequentialGo is the pure-Go backend with its ops run one after another: GoMLX v0.26's
// parallel op scheduler can deadlock on graphs with many independent matrix products, such as
// unrolled flash attention (package xla configures "go" the same way).
var sequentialGo = sync.OnceValue(func() backends.Backend {
	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		panic(err)
	}
	return b
})

// maxAbsDiff is max |a − b| over two float32 tensors of the same shape.
func maxAbsDiff(a, b *tensors.Tensor) float64 {
	x, y := tensors.MustCopyFlatData[float32](a), tensors.MustCopyFlatData[float32](b)
	d := 0.0
	for i := range x {
		d = math.Max(d, math.Abs(float64(x[i]-y[i])))
	}
	return d
}

// Causal attention computed block by block (keys in blocks of 4, query blocks of 4) equals plain
// attention, without ever holding the 16×16 matrix of scores.
func ExampleFlashAttention() {
	exec := MustNewExec(sequentialGo(), func(q, k, v *Node) (flash, lse, plain *Node) {
		flash, lse = mhalib.FlashAttention(q, k, v).BlockSizes(4, 4).Causal(mhalib.CausalTopLeft).DoneWithLSE()
		plain, _ = mhalib.ScaledDotProductAttention(q, k, v).Causal(mhalib.CausalTopLeft).DoneWithWeights()
		return
	})
	q, k, v := ramp(1, 2, 16, 8), ramp(1, 2, 16, 8), ramp(1, 2, 16, 8) // [B=1, h=2, L=16, dk=8]
	res := exec.MustExec(q, k, v)
	fmt.Println("output:", res[0].Shape(), "log-sum-exp:", res[1].Shape())
	fmt.Println("equals plain attention:", maxAbsDiff(res[0], res[2]) < 1e-6)
	// Output:
	// output: (Float32)[1 2 16 8] log-sum-exp: (Float32)[1 2 16]
	// equals plain attention: true
}
