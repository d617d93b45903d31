//go:build solution

package masks

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// AttentionBias builds one additive float32 bias for the attention logits: 0 where query i may
// attend key j, −Inf where it may not.
//
//   - causal: query i may not attend the keys j > i (top-left, as F.scaled_dot_product_attention's
//     is_causal=True).
//   - keyPadding: [B, Lk] bool, true where key j of batch element b is padding (PyTorch's
//     key_padding_mask), or nil for none.
//
// The result has shape [B, 1, Lq, Lk]: the 1 broadcasts over the heads.
func AttentionBias(g *Graph, B, Lq, Lk int, causal bool, keyPadding *Node) *Node {
	zeros := Zeros(g, shapes.Make(dtypes.Float32, B, 1, Lq, Lk))
	var blocked *Node // bool [B, 1, Lq, Lk], true = may not attend
	if causal {
		positions := shapes.Make(dtypes.Int32, B, 1, Lq, Lk)
		i, j := Iota(g, positions, 2), Iota(g, positions, 3) // query and key index of every position
		blocked = GreaterThan(j, i)
	}
	if keyPadding != nil {
		padded := BroadcastToDims(Reshape(keyPadding, B, 1, 1, Lk), B, 1, Lq, Lk)
		if blocked == nil {
			blocked = padded
		} else {
			blocked = LogicalOr(blocked, padded)
		}
	}
	if blocked == nil {
		return zeros
	}
	negInf := Const(g, float32(math.Inf(-1)))
	return Where(blocked, negInf, zeros)
}

// SafeSoftmax is the softmax over the last axis of logits + bias, except that a row whose every
// entry is −Inf (every key masked) gives zeros instead of NaN.
//
// logits: [B, h, Lq, Lk]   bias: [B, 1, Lq, Lk]   →   weights: [B, h, Lq, Lk]
func SafeSoftmax(logits, bias *Node) *Node {
	x := Add(logits, bias)                                            // [B, h, Lq, Lk]; the 1 broadcasts over h
	rowMax := ReduceAndKeep(x, ReduceMax, -1)                         // [B, h, Lq, 1], −Inf for a fully masked row
	rowMax = Where(IsFinite(rowMax), rowMax, ZerosLike(rowMax))       // so that x − rowMax is −Inf, not NaN
	e := Exp(Sub(x, rowMax))                                          // exp(−Inf) = 0 for masked keys
	sum := ReduceAndKeep(e, ReduceSum, -1)                            // [B, h, Lq, 1], 0 for a fully masked row
	sum = Where(GreaterThan(sum, ZerosLike(sum)), sum, OnesLike(sum)) // 0/1 = 0 instead of 0/0
	return Div(e, sum)
}
