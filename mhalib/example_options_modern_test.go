package mhalib_test

import (
	"fmt"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
)

// Grouped-query attention: 4 query heads share 2 key/value heads (heads 0, 1 use kv head 0;
// heads 2, 3 use kv head 1). Every query is (1, 0), so each head's output is a mix of its kv
// head's values.
func ExampleGQAOption_EnableGQA() {
	q := [][][][]float64{{{{1, 0}}, {{1, 0}}, {{1, 0}}, {{1, 0}}}} // [B=1, Hq=4, Lq=1, 2]
	k := [][][][]float64{{{{1, 0}, {0, 0}}, {{0, 0}, {1, 0}}}}     // [1, Hkv=2, Lk=2, 2]
	v := [][][][]float64{{{{1, 0}, {0, 1}}, {{5, 0}, {0, 5}}}}     // [1, 2, 2, 2]
	out := MustExecOnce(goBackend(), func(q, k, v *Node) *Node {
		o, _ := mhalib.ScaledDotProductAttention(q, k, v).EnableGQA(true).Scale(1).DoneWithWeights()
		return o
	}, q, k, v)
	fmt.Printf("%.3f\n", tensors.MustCopyFlatData[float64](out))
	// Output:
	// [0.731 0.269 0.731 0.269 1.345 3.655 1.345 3.655]
}

// A sliding window of one key to the left, causal: each query sees itself and the key before it.
func ExampleAttentionOptions_Window() {
	x := [][][][]float64{{{{0}, {0}, {0}, {0}}}} // [1, 1, L=4, 1]: equal scores, so weights are uniform where allowed
	w := MustExecOnceN(goBackend(), func(x *Node) []*Node {
		_, w := mhalib.ScaledDotProductAttention(x, x, x).Window(1, 0, mhalib.AlignTopLeft).DoneWithWeights()
		return []*Node{w}
	}, x)
	fmt.Printf("%.1f\n", tensors.MustCopyFlatData[float64](w[0]))
	// Output:
	// [1.0 0.0 0.0 0.0 0.5 0.5 0.0 0.0 0.0 0.5 0.5 0.0 0.0 0.0 0.5 0.5]
}

// Soft-capping keeps logits inside (−cap, cap): scores 10 and 0 become 2·tanh(5) ≈ 2 and 0.
func ExampleAttentionOptions_SoftCap() {
	q := [][][][]float64{{{{10}}}}     // [1, 1, 1, 1]
	k := [][][][]float64{{{{1}, {0}}}} // [1, 1, 2, 1]
	w := MustExecOnceN(goBackend(), func(q, k *Node) []*Node {
		_, plain := mhalib.ScaledDotProductAttention(q, k, k).Scale(1).DoneWithWeights()
		_, capped := mhalib.ScaledDotProductAttention(q, k, k).Scale(1).SoftCap(2).DoneWithWeights()
		return []*Node{plain, capped}
	}, q, k)
	fmt.Printf("plain  %.4f\ncapped %.4f\n", tensors.MustCopyFlatData[float64](w[0]), tensors.MustCopyFlatData[float64](w[1]))
	// Output:
	// plain  [1.0000 0.0000]
	// capped [0.8808 0.1192]
}

// An attention sink of logit 0 next to two keys of logit 0 takes a third of the mass: the
// weights sum to 2/3.
func ExampleAttentionOptions_Sinks() {
	x := [][][][]float64{{{{0}, {0}}}} // [1, 1, 2, 1]: every logit 0
	w := MustExecOnceN(goBackend(), func(x *Node) []*Node {
		sinks := Const(x.Graph(), []float64{0}) // [Hq=1]
		_, w := mhalib.ScaledDotProductAttention(x, x, x).Sinks(sinks).DoneWithWeights()
		return []*Node{w}
	}, x)
	fmt.Printf("%.4f\n", tensors.MustCopyFlatData[float64](w[0]))
	// Output:
	// [0.3333 0.3333 0.3333 0.3333]
}

// Multi-query attention in the MHA builder: 4 query heads, 1 key/value head; the key and value
// projections are 4 times smaller than the query's.
func ExampleMHABuilder_KVHeads() {
	ctx := context.New()
	ctx.SetRNGStateFromSeed(1)
	x := [][][]float32{{{1, 0, 0, 0, 0, 0, 0, 0}, {0, 1, 0, 0, 0, 0, 0, 0}}} // [B=1, L=2, E=8]
	exec := context.MustNewExec(goBackend(), ctx, func(ctx *context.Context, x *Node) *Node {
		return mhalib.MultiHeadAttention(ctx, x, x, x, 4).KVHeads(1).Causal(mhalib.CausalTopLeft).Done()
	})
	out := exec.MustExec(x)[0]
	fmt.Println("output", out.Shape())
	for _, name := range []string{mhalib.VarQProjWeight, mhalib.VarKProjWeight, mhalib.VarVProjWeight} {
		fmt.Println(name, ctx.In(mhalib.DefaultScope).GetVariableByScopeAndName("/"+mhalib.DefaultScope, name).Shape())
	}
	// Output:
	// output (Float32)[1 2 8]
	// q_proj_weight (Float32)[8 8]
	// k_proj_weight (Float32)[2 8]
	// v_proj_weight (Float32)[2 8]
}

// A ring-buffer cache for a window of 2 keys back keeps 3 slots, however long the sequence.
func ExampleWindowedKVCache() {
	cache, _ := mhalib.NewWindowedKVCache(1, 1, 2, 4, 4)
	for i := 0; i < 10; i++ {
		_, _ = cache.Advance(1)
	}
	fmt.Println("positions seen", cache.Len(), "slots kept", cache.Slots())
	// Output:
	// positions seen 10 slots kept 3
}
