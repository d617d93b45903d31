package bench

import "fmt"

// modernDecodeGoals checks issue 29's goal 3 for the decoding step of the modern suite: on each
// backend, mhalib's KV-cache step decodes at least as many tokens/s as PyTorch (timed in the
// same run) for every number of key/value heads measured. Nothing without PyTorch's rows.
func modernDecodeGoals(rep *benchReport) []goalResult {
	if rep.Modern == nil {
		return nil
	}
	var goals []goalResult
	for _, r := range rep.Modern.Decode {
		if r.Backend == "torch cpu" || r.Error != "" {
			continue
		}
		v := decodeVsTorch(rep.Modern.Decode, r)
		if v <= 0 {
			continue
		}
		goals = append(goals, goalResult{
			Goal:     fmt.Sprintf("%s KV-cache decode step ≥ PyTorch's tokens/s (%s, %d KV heads)", r.Backend, r.Model, r.KVHeads),
			Measured: fmt.Sprintf("%s× (%.1f vs %.1f tokens/s)", beside(v, 1, 2), r.TokensPerS, r.TokensPerS/v),
			Met:      v >= 1,
		})
	}
	return goals
}

// modernWindowGoals checks the rest of issue 29's goal 3: at L 8192 on xla:cpu, mhalib's causal
// FlashAttention at most PyTorch's SDPA is_causal, and its sliding window at most PyTorch's fastest
// windowed attention (compiled flex_attention or SDPA with the boolean mask), all timed in the same
// run. Nothing for a length or mask without a PyTorch row.
func modernWindowGoals(rep *benchReport) []goalResult {
	if rep.Modern == nil {
		return nil
	}
	var goals []goalResult
	for _, r := range rep.Modern.Window {
		if r.Backend != "xla:cpu" || r.L != 8192 || r.Error != "" || r.MedianMS <= 0 {
			continue
		}
		var best *windowResult
		for i, t := range rep.Modern.Window {
			if t.Backend == "torch cpu" && t.L == r.L && t.Mask == r.Mask && t.Error == "" && t.MedianMS > 0 &&
				(best == nil || t.MedianMS < best.MedianMS) {
				best = &rep.Modern.Window[i]
			}
		}
		if best == nil {
			continue
		}
		ratio := r.MedianMS / best.MedianMS
		need := peakNeed(rep.Machine, r.GFLOPS*r.MedianMS/best.MedianMS) // the same FLOPs in PyTorch's time
		goals = append(goals, goalResult{
			Goal:     fmt.Sprintf("%s FlashAttention %s at L %d ≤ PyTorch's fastest (%s)", r.Backend, r.Mask, r.L, r.Shape),
			Measured: fmt.Sprintf("%s× (%s vs %s %s%s)", beside(ratio, 1, 2), FormatMS(r.MedianMS), best.Impl, FormatMS(best.MedianMS), need),
			Met:      ratio <= 1,
		})
	}
	return goals
}
