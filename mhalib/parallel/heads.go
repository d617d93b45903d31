package parallel

import (
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph code reads better unqualified

	"github.com/mhalab/mhalab/mhalib"
)

// HeadWeights are one device's share of multi-head attention weights, in PyTorch's layout
// (y = x·Wᵀ, mhalib's q_proj_weight, k_proj_weight, v_proj_weight, out_proj.weight, no biases).
// With E the model width, h heads of dk = E/h features and hl = h/N heads on each of N devices,
// device d holds heads [d·hl, (d+1)·hl):
//
//	Wq, Wk, Wv  [hl·dk, E]   rows d·hl·dk … (d+1)·hl·dk of q/k/v_proj_weight [E, E]
//	Wo          [E, hl·dk]   the same columns of out_proj.weight [E, E]
//
// HeadShardingSpecs says how to cut the full weights this way.
type HeadWeights struct {
	Wq, Wk, Wv, Wo *Node
}

// project computes x·wᵀ: x [B, L, in], w [out, in] → [B, L, out].
func project(x, w *Node) *Node {
	return DotGeneral(x, []int{2}, nil, w, []int{1}, nil) // [B, L, out]
}

// HeadParallel computes multi-head self-attention of x with this device's heads and adds the
// devices' partial outputs with one all-reduce:
//
//	x [B, L, E] (the same on every device) → partial = heads_d·Wo_dᵀ [B, L, E] → y = Σ_d partial_d [B, L, E]
//
// localHeads is hl, the number of heads in w. causal is mhalib's causal option (NoCausal,
// CausalTopLeft, CausalBottomRight). In a graph on one device (localHeads = h) y is
// mhalib.MultiHeadAttention's output for the full weights, without biases. It panics with an
// *mhalib.ArgumentError for inconsistent shapes.
func HeadParallel(x *Node, w HeadWeights, localHeads int, causal mhalib.Causal) (y, partial *Node) {
	checkHeadInputs(x, w, localHeads)
	// 1) This device's heads: q, k, v [B, L, hl·dk] → [B, hl, L, dk].
	q := mhalib.SplitHeads(project(x, w.Wq), localHeads)
	k := mhalib.SplitHeads(project(x, w.Wk), localHeads)
	v := mhalib.SplitHeads(project(x, w.Wv), localHeads)
	// 2) Attention in each head, heads merged: [B, hl, L, dk] → [B, L, hl·dk].
	out := mhalib.ScaledDotProductAttention(q, k, v).Causal(causal).Done()
	heads := mhalib.MergeHeads(out)
	// 3) This device's share of the output projection, then the sum over devices.
	partial = project(heads, w.Wo) // [B, L, E]
	return AllReduceSum(partial), partial
}

// HeadGradients are the gradients of ⟨y, dy⟩ for HeadParallel: Dx [B, L, E] is the same on
// every device (all-reduced); the weights' gradients are this device's shards, shaped as
// HeadWeights.
type HeadGradients struct {
	Dx                 *Node
	DWq, DWk, DWv, DWo *Node
}

// HeadParallelGradients is HeadParallel's forward pass and the gradients of ⟨y, dy⟩ for a
// cotangent dy [B, L, E] (the same on every device), with one more all-reduce, for Dx.
func HeadParallelGradients(x *Node, w HeadWeights, localHeads int, causal mhalib.Causal, dy *Node) (y *Node, grads HeadGradients) {
	y, partial := HeadParallel(x, w, localHeads, causal)
	d := vjpOfPartials(y, dy, []*Node{partial}, []*Node{y}, x, w.Wq, w.Wk, w.Wv, w.Wo)
	return y, HeadGradients{Dx: AllReduceSum(d[0]), DWq: d[1], DWk: d[2], DWv: d[3], DWo: d[4]}
}

func checkHeadInputs(x *Node, w HeadWeights, localHeads int) {
	if x == nil || x.Rank() != 3 {
		panic(&mhalib.ArgumentError{Arg: "x", Msg: "HeadParallel wants [batch, length, embedDim]"})
	}
	E := x.Shape().Dim(2)
	if w.Wq == nil || w.Wk == nil || w.Wv == nil || w.Wo == nil {
		panic(&mhalib.ArgumentError{Arg: "HeadWeights", Msg: "Wq, Wk, Wv and Wo are all needed"})
	}
	width := w.Wq.Shape().Dim(0)
	for name, n := range map[string]*Node{"Wq": w.Wq, "Wk": w.Wk, "Wv": w.Wv} {
		if n.Rank() != 2 || n.Shape().Dim(0) != width || n.Shape().Dim(1) != E {
			panic(&mhalib.ArgumentError{Arg: name, Msg: "shape " + n.Shape().String() + ": want [hl·dk, E] with E the width of x " + x.Shape().String() + " and the rows of Wq"})
		}
	}
	if w.Wo.Rank() != 2 || w.Wo.Shape().Dim(0) != E || w.Wo.Shape().Dim(1) != width {
		panic(&mhalib.ArgumentError{Arg: "Wo", Msg: "shape " + w.Wo.Shape().String() + ": want [E, hl·dk] matching Wq " + w.Wq.Shape().String()})
	}
	if localHeads <= 0 || width%localHeads != 0 {
		panic(&mhalib.ArgumentError{Arg: "localHeads", Msg: "must divide the rows of Wq " + w.Wq.Shape().String()})
	}
}
