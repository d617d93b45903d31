//go:build solution

package kvcache

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// DecodeStep is one step of autoregressive decoding with a KV cache: the new token's key and
// value are written into the caches at position pos, and its query attends to the positions
// 0…pos (scale 1/√dk). Positions after pos hold stale values and must get no weight.
//
//	q, newK: [B, h, 1, dk]   newV: [B, h, 1, dv]
//	kCache: [B, h, MaxLen, dk]   vCache: [B, h, MaxLen, dv]
//	pos: int32 scalar, 0 ≤ pos < MaxLen (a graph input: one compiled graph serves every step)
//	→ out: [B, h, 1, dv], and the caches with position pos overwritten.
func DecodeStep(q, newK, newV, kCache, vCache, pos *Node) (out, newKCache, newVCache *Node) {
	g := q.Graph()
	maxLen, dk := kCache.Shape().Dim(2), q.Shape().Dim(-1)
	pos4 := ExpandLeftToRank(pos, 4) // [1, 1, 1, 1]

	// 1) Write: row pos of each cache becomes the new key/value. (The pure-Go backend has no
	//    DynamicUpdateSlice, so select with a mask instead.)
	rows := Iota(g, shapes.Make(dtypes.Int32, 1, 1, maxLen, 1), 2) // [1, 1, MaxLen, 1]: the row index
	at := Equal(rows, pos4)                                        // true on row pos
	write := func(cache, row *Node) *Node {
		dims := cache.Shape().Dimensions
		return Where(BroadcastToDims(at, dims...), BroadcastToDims(row, dims...), cache)
	}
	newKCache, newVCache = write(kCache, newK), write(vCache, newV)

	// 2) Attend to positions 0…pos; later positions get −Inf (replaced, not added, so that any
	//    stale value there cannot leak in).
	logits := MulScalar(Einsum("bhqd,bhkd->bhqk", q, newKCache), 1/math.Sqrt(float64(dk))) // [B, h, 1, MaxLen]
	cols := Iota(g, shapes.Make(dtypes.Int32, 1, 1, 1, maxLen), 3)                         // key positions
	future := BroadcastToDims(GreaterThan(cols, pos4), logits.Shape().Dimensions...)
	logits = Where(future, Const(g, float32(math.Inf(-1))), logits)
	weights := Softmax(logits, -1)                      // row pos ≥ 0 always has a key: no NaN
	out = Einsum("bhqk,bhkd->bhqd", weights, newVCache) // [B, h, 1, dv]
	return out, newKCache, newVCache
}
