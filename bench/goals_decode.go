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
			Measured: fmt.Sprintf("%.2f× (%.1f vs %.1f tokens/s)", v, r.TokensPerS, r.TokensPerS/v),
			Met:      v >= 1,
		})
	}
	return goals
}
