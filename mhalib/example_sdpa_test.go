package mhalib_test

import (
	"fmt"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/mhalib"
)

// Attention of 2 queries over 3 keys in one head; the mask hides key 2 from query 0.
func ExampleScaledDotProductAttention() {
	q := [][][][]float64{{{{1, 0}, {0, 1}}}}         // [B=1, h=1, Lq=2, dk=2]
	k := [][][][]float64{{{{1, 0}, {0, 1}, {1, 1}}}} // [1, 1, Lk=3, 2]
	v := [][][][]float64{{{{1, 0}, {0, 1}, {5, 5}}}} // [1, 1, 3, dv=2]
	res := MustExecOnceN(goBackend(), func(q, k, v *Node) []*Node {
		mask := Const(q.Graph(), [][]bool{{true, true, false}, {true, true, true}}) // [Lq, Lk], true = attend
		out, w := mhalib.ScaledDotProductAttention(q, k, v).
			AttnMask(mhalib.MaskAttendWhereTrue(mask)).
			DoneWithWeights()
		return []*Node{out, w}
	}, q, k, v)
	fmt.Printf("weights %.3f\n", tensors.MustCopyFlatData[float64](res[1]))
	fmt.Printf("output  %.3f\n", tensors.MustCopyFlatData[float64](res[0]))
	// Output:
	// weights [0.670 0.330 0.000 0.198 0.401 0.401]
	// output  [0.670 0.330 2.203 2.407]
}

// The two boolean conventions, spelled out: the same mask, expressed both ways, gives the same weights.
func ExampleMaskBlockedWhereTrue() {
	x := [][][][]float64{{{{1, 2}, {3, 4}, {5, 6}}}} // [1, 1, 3, 2]
	w := MustExecOnceN(goBackend(), func(x *Node) []*Node {
		g := x.Graph()
		blocked := Const(g, [][]bool{{false, true, true}, {false, false, true}, {false, false, false}}) // nn.MultiheadAttention
		attend := Const(g, [][]bool{{true, false, false}, {true, true, false}, {true, true, true}})     // F.scaled_dot_product_attention
		_, w1 := mhalib.ScaledDotProductAttention(x, x, x).AttnMask(mhalib.MaskBlockedWhereTrue(blocked)).DoneWithWeights()
		_, w2 := mhalib.ScaledDotProductAttention(x, x, x).AttnMask(mhalib.MaskAttendWhereTrue(attend)).DoneWithWeights()
		_, w3 := mhalib.ScaledDotProductAttention(x, x, x).Causal(mhalib.CausalTopLeft).DoneWithWeights()
		return []*Node{w1, w2, w3}
	}, x)
	fmt.Println(w[0].Equal(w[1]), w[0].Equal(w[2]))
	// Output:
	// true true
}

// Decoding 1 new token after 2 cached ones: bottom-right causal lets it see all 3 keys,
// top-left only the first.
func ExampleCausal() {
	q := [][][][]float64{{{{1, 1}}}}                 // [1, 1, Lq=1, 2]
	k := [][][][]float64{{{{1, 0}, {0, 1}, {1, 1}}}} // [1, 1, Lk=3, 2]
	w := MustExecOnceN(goBackend(), func(q, k *Node) []*Node {
		_, br := mhalib.ScaledDotProductAttention(q, k, k).Causal(mhalib.CausalBottomRight).DoneWithWeights()
		_, tl := mhalib.ScaledDotProductAttention(q, k, k).Causal(mhalib.CausalTopLeft).DoneWithWeights()
		return []*Node{br, tl}
	}, q, k)
	fmt.Printf("bottom-right %.3f\ntop-left     %.3f\n", tensors.MustCopyFlatData[float64](w[0]), tensors.MustCopyFlatData[float64](w[1]))
	// Output:
	// bottom-right [0.248 0.248 0.503]
	// top-left     [1.000 0.000 0.000]
}

// A query whose every key is masked gets zero weights and output (default −inf fill), or
// uniform weights with the classic −1e9 fill. Never NaN.
func ExampleSDPABuilder_Fill() {
	x := [][][][]float64{{{{1, 2}, {3, 4}}}} // [1, 1, 2, 2]
	w := MustExecOnceN(goBackend(), func(x *Node) []*Node {
		none := mhalib.MaskBlockedWhereTrue(Const(x.Graph(), [][]bool{{true, true}, {false, false}})) // query 0 sees nothing
		_, inf := mhalib.ScaledDotProductAttention(x, x, x).AttnMask(none).DoneWithWeights()
		_, big := mhalib.ScaledDotProductAttention(x, x, x).AttnMask(none).Fill(mhalib.FillMinus1e9).DoneWithWeights()
		return []*Node{inf, big}
	}, x)
	fmt.Printf("fill -inf: %.3f\nfill -1e9: %.3f\n", tensors.MustCopyFlatData[float64](w[0]), tensors.MustCopyFlatData[float64](w[1]))
	// Output:
	// fill -inf: [0.000 0.000 0.000 1.000]
	// fill -1e9: [0.500 0.500 0.000 1.000]
}
