package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// ALiBi, "Attention with Linear Biases" (Press, Smith, Lewis 2022, "Train Short, Test Long"):
// no position embedding at all; instead each head h adds to its logits a penalty growing with
// the distance between query i and key j,
//
//	logits[h, i, j] += slope_h · (j − i)        (≤ 0 for the keys a causal query sees)
//
// with one fixed slope per head, a geometric sequence. For n heads, n a power of two:
//
//	slope_h = 2^(−8(h+1)/n),  h = 0 … n−1      (8 heads: 1/2, 1/4, …, 1/256)
//
// For other n the paper's code takes the slopes of the largest power of two m < n and then every
// other slope of 2m (the 1st, 3rd, …) until there are n. Adding a constant to a whole row does
// not change a softmax, so with Lq ≠ Lk the alignment of i and j does not matter (it would with
// attention sinks); mhalib uses j − i, as `mhalab sdpa --alibi`.

// ALiBiSlopes returns the n per-head slopes of the ALiBi paper (see above); it panics with an
// *ArgumentError for n < 1.
func ALiBiSlopes(n int) []float64 {
	if n < 1 {
		panicArg("ALiBiSlopes", "%d heads: want at least 1", n)
	}
	geometric := func(n int) []float64 { // 2^(−8/n), 2^(−16/n), …
		s := make([]float64, n)
		for h := range s {
			s[h] = math.Exp2(-8 * float64(h+1) / float64(n))
		}
		return s
	}
	m := 1 << (63 - leadingZeros(uint64(n))) // largest power of two ≤ n
	slopes := geometric(m)
	for h, s := range geometric(2 * m) {
		if len(slopes) == n {
			break
		}
		if h%2 == 0 {
			slopes = append(slopes, s)
		}
	}
	return slopes
}

// leadingZeros counts the leading zero bits of x (x > 0).
func leadingZeros(x uint64) int {
	n := 0
	for x&(1<<63) == 0 {
		x <<= 1
		n++
	}
	return n
}

// alibiBias returns slope_h · (j − i) for the query positions i and key positions j of a tile,
// int32 [1, 1, rows, cols] (maskSet.tilePositions): [1, H, rows, cols] in dtype.
func alibiBias(slopes []float64, i, j *Node, dtype dtypes.DType) *Node {
	dist := Sub(j, i)                                                      // [1, 1, rows, cols]: j − i
	s := Reshape(Const(i.Graph(), slopes), 1, len(slopes), 1, 1)           // [1, H, 1, 1]
	return ConvertDType(Mul(ConvertDType(dist, dtypes.Float64), s), dtype) // [1, H, rows, cols]
}
