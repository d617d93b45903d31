package fastgo

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOffsetsMemo: offsets, kept or not, equals buildOffsets for random shapes and axes, asked
// twice (the second from the memo) and interleaved with other operands of the same dims, so a
// key that left out an axis list would hand one operand another's tables.
func TestOffsetsMemo(t *testing.T) {
	rng := rand.New(rand.NewPCG(vecSeed(t), 5))
	for range 500 {
		rank := 1 + rng.IntN(5)
		dims := make([]int, rank)
		for a := range dims {
			dims[a] = 1 + rng.IntN(6)
		}
		perm := rng.Perm(rank)
		nc := rng.IntN(rank + 1)
		nb := rng.IntN(rank - nc + 1)
		contract, batch := perm[:nc], perm[nc:nc+nb]
		for pass := range 2 {
			b, c, k := offsets(dims, contract, batch)
			wb, wc, wk := buildOffsets(dims, contract, batch)
			if !slices.Equal(b, wb) || !slices.Equal(c, wc) || !slices.Equal(k, wk) {
				t.Fatalf("pass %d: offsets(%v, %v, %v) = %v %v %v, want %v %v %v", pass, dims, contract, batch, b, c, k, wb, wc, wk)
			}
			// another operand of the same dims: the contracting and batch axes swapped
			b, c, k = offsets(dims, batch, contract)
			wb, wc, wk = buildOffsets(dims, batch, contract)
			if !slices.Equal(b, wb) || !slices.Equal(c, wc) || !slices.Equal(k, wk) {
				t.Fatalf("pass %d, axes swapped: offsets(%v, %v, %v) = %v %v %v, want %v %v %v", pass, dims, batch, contract, b, c, k, wb, wc, wk)
			}
		}
	}
}
