package explorer

import (
	"fmt"
	"math/rand/v2"
)

// InductionSeed is the seed of the random tokens InductionTokens draws: every run of a
// summary measures the same sequence.
const InductionSeed = 2026

// InductionTokens returns period token ids drawn from [lo, hi) with InductionSeed, then the
// same period ids again: [2·period]. An induction head, at a token of the second copy, attends
// to the token that followed the same token in the first copy.
func InductionTokens(period, lo, hi int) []int {
	rng := rand.New(rand.NewPCG(InductionSeed, uint64(period)))
	out := make([]int, 2*period)
	for i := range period {
		out[i] = lo + rng.IntN(hi-lo)
		out[period+i] = out[i]
	}
	return out
}

// InductionScores measures every head on a sequence whose tokens [start, start+period) repeat
// at [start+period, start+2·period): the mean, over the queries q of the second copy, of the
// weight on q − period + 1 (the token after the earlier occurrence of q's token). att:
// [layers][heads][L][L] with L ≥ start + 2·period; the result is [layers][heads], 0 to 1.
func InductionScores(att [][][][]float32, start, period int) ([][]float64, error) {
	if period < 1 || start < 0 {
		return nil, fmt.Errorf("explorer: induction: period %d, start %d: want period ≥ 1, start ≥ 0", period, start)
	}
	out := make([][]float64, len(att))
	for l, layer := range att {
		out[l] = make([]float64, len(layer))
		for h, w := range layer {
			if len(w) < start+2*period {
				return nil, fmt.Errorf("explorer: induction: layer %d head %d has %d query rows, want ≥ %d", l, h, len(w), start+2*period)
			}
			sum := 0.0
			for q := start + period; q < start+2*period; q++ {
				sum += float64(w[q][q-period+1])
			}
			out[l][h] = sum / float64(period)
		}
	}
	return out, nil
}
