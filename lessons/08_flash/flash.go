// Package flash is lesson 8: the online softmax, one block of FlashAttention at a time.
//
// Read README.md, replace the TODOs below with your code, then run `mhalab lessons check 8`.
// The State type and NewState are given in state.go.
package flash

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// Block folds one block of keys and values into the state (FlashAttention-2, algorithm 1):
//
//	s     = scale · q·k_blockᵀ                     [B, h, Lq, Lb]
//	m_new = max(M, max_j s_j)                       [B, h, Lq, 1]
//	α     = exp(M − m_new)                          rescales what was summed with the old maximum
//	p     = exp(s − m_new)                          [B, h, Lq, Lb]
//	L'    = α·L + Σ_j p_j
//	Acc'  = α·Acc + p·v_block
//	M'    = m_new
//
// q: [B, h, Lq, dk]   kBlock: [B, h, Lb, dk]   vBlock: [B, h, Lb, dv]
func Block(s State, q, kBlock, vBlock *Node, scale float64) State {
	// TODO: the update above.
	return s
}

// Finish turns the state after the last block into the attention output and the log-sum-exp of
// every row:
//
//	out = Acc / L          [B, h, Lq, dv]
//	lse = M + log(L)       [B, h, Lq]     (the axis of size 1 removed)
func Finish(s State) (out, lse *Node) {
	// TODO: out and lse.
	return s.Acc, Squeeze(s.M, -1)
}
