package mhalib_test

import (
	"fmt"

	. "github.com/gomlx/gomlx/pkg/core/graph"

	"github.com/mhalab/mhalab/mhalib"
)

// ScaledDotProductAttention and FlashAttention share their options (AttentionOptions): the same
// chain of setters configures either, and both compute the same attention.
func ExampleAttentionOptions() {
	exec := MustNewExec(sequentialGo(), func(q, k, v *Node) (plain, flash *Node) {
		plain, _ = mhalib.ScaledDotProductAttention(q, k, v).Causal(mhalib.CausalTopLeft).Scale(0.125).DoneWithWeights()
		flash = mhalib.FlashAttention(q, k, v).Causal(mhalib.CausalTopLeft).Scale(0.125).Done()
		return
	})
	x := ramp(1, 2, 8, 4) // q = k = v: [B=1, h=2, L=8, dk=4]
	res := exec.MustExec(x, x, x)
	fmt.Println("output:", res[0].Shape())
	fmt.Println("same attention:", maxAbsDiff(res[0], res[1]) < 1e-6)
	// Output:
	// output: (Float32)[1 2 8 4]
	// same attention: true
}
