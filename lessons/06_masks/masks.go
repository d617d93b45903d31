// Package masks is lesson 6: causal and key-padding masks, and a softmax that survives a row with
// every key masked.
//
// Read README.md, replace the TODOs below with your code, then run `mhalab lessons check 6`.
package masks

import (
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
	// TODO: mark the blocked positions, then turn them into −Inf and the others into 0.
	return Zeros(g, shapes.Make(dtypes.Float32, B, 1, Lq, Lk))
}

// SafeSoftmax is the softmax over the last axis of logits + bias, except that a row whose every
// entry is −Inf (every key masked) gives zeros instead of NaN.
//
// logits: [B, h, Lq, Lk]   bias: [B, 1, Lq, Lk]   →   weights: [B, h, Lq, Lk]
func SafeSoftmax(logits, bias *Node) *Node {
	// TODO: add the bias, then a softmax that keeps fully masked rows at 0.
	return logits
}
