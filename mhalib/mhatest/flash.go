package mhatest

import (
	"fmt"
	"math"
)

// OnlineSoftmaxAttention computes the same output as SDPA without ever
// holding a full row of weights: it walks the keys in blocks of blockK and
// keeps, per query row, three running quantities (FlashAttention-2's
// recurrence, Dao 2023, algorithm 1):
//
//	m    running maximum of the logits seen so far      (starts at −Inf)
//	l    running Σ exp(logit − m)                       (starts at 0)
//	acc  running Σ exp(logit − m)·v[j]  [dv]            (starts at 0)
//
// For each block with logits s_j (j in the block):
//
//	m_new = max(m, max_j s_j)
//	α     = exp(m − m_new)          rescales what was summed with the old max
//	p_j   = exp(s_j − m_new)
//	l     = α·l   + Σ_j p_j
//	acc   = α·acc + Σ_j p_j·v[j]
//	m     = m_new
//
// and at the end out = acc / l, lse = m + log(l) (the log-sum-exp of the
// row, which the backward pass uses to recompute the weights).
//
// q: [B, h, Lq, dk], k: [B, h, Lk, dk], v: [B, h, Lk, dv],
// bias: [B, h, Lq, Lk] or nil, scale 0 → 1/√dk, blockK ≥ 1 (need not divide Lk)
// → out: [B, h, Lq, dv], lse: [B, h, Lq].
//
// A fully masked row (every logit −Inf) keeps m = −Inf and l = 0; it gets
// out = 0 and lse = −Inf, matching SDPA's zero rows.
// It panics with an error value on inconsistent shapes or blockK < 1.
func OnlineSoftmaxAttention(q, k, v, bias *Tensor, scale float64, blockK int) (out, lse *Tensor) {
	B, h, Lq, dk, Lk, dv := checkSDPAShapes(q, k, v, bias)
	if blockK < 1 {
		panic(fmt.Errorf("mhatest: OnlineSoftmaxAttention: blockK=%d, want >= 1", blockK))
	}
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(dk))
	}
	out = New(B, h, Lq, dv)
	lse = New(B, h, Lq)
	acc := make([]float64, dv) // [dv]
	for b := 0; b < B; b++ {
		for head := 0; head < h; head++ {
			for i := 0; i < Lq; i++ {
				m, l := math.Inf(-1), 0.0
				for d := range acc {
					acc[d] = 0
				}
				for start := 0; start < Lk; start += blockK {
					end := min(start+blockK, Lk) // keys [start, end)
					// Logits of this block: s[j−start], [end−start].
					s := make([]float64, end-start)
					blockMax := math.Inf(-1)
					for j := start; j < end; j++ {
						dot := 0.0
						for d := 0; d < dk; d++ {
							dot += q.At(b, head, i, d) * k.At(b, head, j, d)
						}
						s[j-start] = scale * dot
						if bias != nil {
							s[j-start] += bias.At(b, head, i, j)
						}
						blockMax = math.Max(blockMax, s[j-start])
					}
					mNew := math.Max(m, blockMax)
					if math.IsInf(mNew, -1) {
						continue // everything so far is masked: nothing to add
					}
					alpha := math.Exp(m - mNew) // exp(−Inf) = 0 on the first visible block
					l *= alpha
					for d := range acc {
						acc[d] *= alpha
					}
					for j := start; j < end; j++ {
						p := math.Exp(s[j-start] - mNew)
						l += p
						for d := 0; d < dv; d++ {
							acc[d] += p * v.At(b, head, j, d)
						}
					}
					m = mNew
				}
				if l == 0 { // fully masked row
					lse.Set(math.Inf(-1), b, head, i)
					continue
				}
				for d := 0; d < dv; d++ {
					out.Set(acc[d]/l, b, head, i, d)
				}
				lse.Set(m+math.Log(l), b, head, i)
			}
		}
	}
	return out, lse
}
