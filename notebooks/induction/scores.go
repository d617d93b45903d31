package induction

import (
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Scores of attention heads, from weights [B, H, L, L] (query i, key j) of one layer.

// PrevTokenScore returns, per head, the mean weight of query i on key i−1 (i ≥ 1): 1 for a
// perfect previous-token head, about 1/(i+1) for a head that spreads its weight evenly.
func PrevTokenScore(w *tensors.Tensor) []float64 {
	return score(w, func(b, i int) int {
		if i == 0 {
			return -1
		}
		return i - 1
	})
}

// InductionScore returns, per head, the mean weight of query i in the second copy of the prefix
// (s+P ≤ i ≤ s+2P−2) on key i−P+1: the position right after the previous occurrence of token
// i, whose token comes next. 1 for a perfect induction head.
func InductionScore(w *tensors.Tensor, batch Batch) []float64 {
	return score(w, func(b, i int) int {
		if s, p := batch.Start[b], batch.Prefix[b]; i >= s+p && i <= s+2*p-2 {
			return i - p + 1
		}
		return -1
	})
}

// score averages w[b, h, i, key(b, i)] over the (b, i) with key(b, i) ≥ 0, per head h.
func score(w *tensors.Tensor, key func(b, i int) int) []float64 {
	d := w.Shape().Dimensions // [B, H, L, L]
	data := tensors.MustCopyFlatData[float32](w)
	out := make([]float64, d[1])
	for h := range d[1] {
		sum, n := 0.0, 0
		for b := range d[0] {
			for i := range d[2] {
				if j := key(b, i); j >= 0 {
					sum += float64(data[((b*d[1]+h)*d[2]+i)*d[3]+j])
					n++
				}
			}
		}
		if n > 0 {
			out[h] = sum / float64(n)
		}
	}
	return out
}

// CopyAccuracy returns the fraction of the masked positions (the copies) where the most likely
// next token of logits [B, L, V] is the target.
func CopyAccuracy(logits *tensors.Tensor, batch Batch) float64 {
	d := logits.Shape().Dimensions
	data := tensors.MustCopyFlatData[float32](logits)
	targets := tensors.MustCopyFlatData[int32](batch.Targets)
	mask := tensors.MustCopyFlatData[float32](batch.Mask)
	right, n := 0, 0
	for bi := range d[0] * d[1] {
		if mask[bi] == 0 {
			continue
		}
		row := data[bi*d[2] : (bi+1)*d[2]]
		best := 0
		for v := range row {
			if row[v] > row[best] {
				best = v
			}
		}
		if int32(best) == targets[bi] {
			right++
		}
		n++
	}
	return float64(right) / float64(max(n, 1))
}
