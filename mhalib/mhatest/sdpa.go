package mhatest

import (
	"fmt"
	"math"
)

// SDPA is scaled dot-product attention, one head and one query at a time:
//
//	logits[i, j]  = scale · Σ_d q[i, d]·k[j, d] + bias[i, j]
//	weights[i, :] = softmax(logits[i, :])
//	out[i, :]     = Σ_j weights[i, j] · v[j, :]
//
// q: [B, h, Lq, dk], k: [B, h, Lk, dk], v: [B, h, Lk, dv],
// bias: [B, h, Lq, Lk] or nil (see MaskSpec.Bias) →
// out: [B, h, Lq, dv], weights: [B, h, Lq, Lk].
// scale 0 means 1/√dk.
//
// The softmax subtracts the row maximum before exponentiating, so large
// logits do not overflow.
//
// Fully masked rows: a row whose every logit is −Inf gets 0 weights and
// 0 output, never NaN. This is the convention of PyTorch ≥ 2.5
// F.scaled_dot_product_attention (and of mhalib); the textbook softmax would
// give 0/0 = NaN. With a finite fill such as −1e9 the row is not "fully
// masked" in this sense and gets ordinary softmax weights (uniform when
// masked_fill made all its logits −1e9, see SDPAMaskedFill).
//
// SDPA panics with an error value on inconsistent shapes.
func SDPA(q, k, v, bias *Tensor, scale float64) (out, weights *Tensor) {
	return SDPAMaskedFill(q, k, v, bias, nil, 0, scale)
}

// SDPAMaskedFill is SDPA with, in addition, PyTorch's masked_fill applied to
// the logits after the bias: where blocked[b, h, i, j] ≠ 0 the logit is
// replaced by fill,
//
//	logits = scale · q·kᵀ + bias
//	logits = logits.masked_fill(blocked, fill)
//
// which is seed 000's scores.masked_fill(mask == 0, -1e9). With −1e9, a
// fully blocked row has all logits equal to −1e9 and gets uniform weights
// (the mean of v); with fill −Inf it gets zeros, as in SDPA.
//
// blocked: [B, h, Lq, Lk] of 0/1, or nil (then fill is unused).
// See SDPA for the other arguments and the results.
func SDPAMaskedFill(q, k, v, bias, blocked *Tensor, fill, scale float64) (out, weights *Tensor) {
	B, h, Lq, dk, Lk, dv := checkSDPAShapes(q, k, v, bias)
	if blocked != nil && !SameShape(blocked.Shape, []int{B, h, Lq, Lk}) {
		panic(fmt.Errorf("mhatest: SDPAMaskedFill: blocked shape %v, want [%d %d %d %d] (B, h, Lq, Lk)", blocked.Shape, B, h, Lq, Lk))
	}
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(dk))
	}
	out = New(B, h, Lq, dv)
	weights = New(B, h, Lq, Lk)
	logits := make([]float64, Lk) // one row: [Lk]
	for b := 0; b < B; b++ {
		for head := 0; head < h; head++ {
			for i := 0; i < Lq; i++ {
				// 1) logits[j] = scale · q[i]·k[j] + bias[i, j], or fill if blocked
				for j := 0; j < Lk; j++ {
					dot := 0.0
					for d := 0; d < dk; d++ {
						dot += q.At(b, head, i, d) * k.At(b, head, j, d)
					}
					logits[j] = scale * dot
					if bias != nil {
						logits[j] += bias.At(b, head, i, j)
					}
					if blocked != nil && blocked.At(b, head, i, j) != 0 {
						logits[j] = fill
					}
				}
				// 2) softmax with max subtraction; a fully −Inf row stays 0.
				rowMax := math.Inf(-1)
				for _, l := range logits {
					rowMax = math.Max(rowMax, l)
				}
				if math.IsInf(rowMax, -1) {
					continue // weights and out of this row stay 0
				}
				sum := 0.0
				for j, l := range logits {
					e := math.Exp(l - rowMax) // exp(−Inf) = 0 for masked keys
					weights.Set(e, b, head, i, j)
					sum += e
				}
				for j := 0; j < Lk; j++ {
					weights.Set(weights.At(b, head, i, j)/sum, b, head, i, j)
				}
				// 3) out[i] = Σ_j weights[i, j] · v[j]
				for d := 0; d < dv; d++ {
					acc := 0.0
					for j := 0; j < Lk; j++ {
						acc += weights.At(b, head, i, j) * v.At(b, head, j, d)
					}
					out.Set(acc, b, head, i, d)
				}
			}
		}
	}
	return out, weights
}

// checkSDPAShapes validates the shapes of SDPA's arguments and returns the
// dimensions; it panics with an error value naming the shapes.
func checkSDPAShapes(q, k, v, bias *Tensor) (B, h, Lq, dk, Lk, dv int) {
	if q.Rank() != 4 || k.Rank() != 4 || v.Rank() != 4 {
		panic(fmt.Errorf("mhatest: SDPA wants rank-4 q, k, v [B, h, L, d]; got q %v, k %v, v %v", q.Shape, k.Shape, v.Shape))
	}
	B, h, Lq, dk = q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
	Lk, dv = k.Shape[2], v.Shape[3]
	if !SameShape(k.Shape, []int{B, h, Lk, dk}) || !SameShape(v.Shape, []int{B, h, Lk, dv}) {
		panic(fmt.Errorf("mhatest: SDPA: q %v, k %v, v %v do not fit q [B, h, Lq, dk], k [B, h, Lk, dk], v [B, h, Lk, dv]", q.Shape, k.Shape, v.Shape))
	}
	if bias != nil && !SameShape(bias.Shape, []int{B, h, Lq, Lk}) {
		panic(fmt.Errorf("mhatest: SDPA: bias shape %v, want [%d %d %d %d] (B, h, Lq, Lk)", bias.Shape, B, h, Lq, Lk))
	}
	return
}
