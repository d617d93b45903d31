//go:build solution

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
	logits := MulScalar(Einsum("bhqd,bhkd->bhqk", q, kBlock), scale) // [B, h, Lq, Lb]
	mNew := Max(s.M, ReduceAndKeep(logits, ReduceMax, -1))           // [B, h, Lq, 1]
	alpha := Exp(Sub(s.M, mNew))                                     // exp(−Inf) = 0 on the first block
	p := Exp(Sub(logits, mNew))                                      // [B, h, Lq, Lb]
	return State{
		M:   mNew,
		L:   Add(Mul(alpha, s.L), ReduceAndKeep(p, ReduceSum, -1)),
		Acc: Add(Mul(alpha, s.Acc), Einsum("bhqk,bhkd->bhqd", p, vBlock)),
	}
}

// Finish turns the state after the last block into the attention output and the log-sum-exp of
// every row:
//
//	out = Acc / L          [B, h, Lq, dv]
//	lse = M + log(L)       [B, h, Lq]     (the axis of size 1 removed)
func Finish(s State) (out, lse *Node) {
	return Div(s.Acc, s.L), Squeeze(Add(s.M, Log(s.L)), -1)
}
