package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Fewer nodes per query block of flashByRows (flashrows.go). The pure-Go backend runs every node
// of the graph on every call, and at B1 L4096 causal (8 query blocks, 36 score tiles) about a
// thousand nodes were scalars or index vectors: each key or value Gather turned the previous
// block's token into an index offset of its own (a multiply, a conversion, a broadcast), and
// each diagonal or strip tile turned its constant bool "may see" tile into an additive
// 0/−inf tile with a Where. A rowTaker makes the offset once per block (and its broadcast once
// per number of rows); bandBiases makes each additive tile a constant, one per distinct tile (a
// tile depends only on the keys' offset from the rows, so every diagonal tile is the same).

// rowTaker cuts rows out of tensors after a token (takeRowsAfter) with one index offset for all
// its Gathers.
type rowTaker struct {
	zero  *Node         // scalar int32 0 computed from the token; nil without a token
	zeros map[int]*Node // zero broadcast to [n, 1], by n
}

// newRowTaker returns the taker of the block after token (nil: the first block).
func newRowTaker(token *Node) *rowTaker {
	t := &rowTaker{zeros: map[int]*Node{}}
	if token != nil {
		t.zero = ConvertDType(MulScalar(token, 0), dtypes.Int32) // scalar 0, after token
	}
	return t
}

// take returns x[from:from+n] along axis 0 (a Gather of contiguous rows) after the taker's
// token: x's shape with n on axis 0.
func (t *rowTaker) take(x *Node, from, n int) *Node {
	idx := make([][]int32, n)
	for i := range idx {
		idx[i] = []int32{int32(from + i)}
	}
	indices := Const(x.Graph(), idx) // [n, 1]
	if t.zero != nil {
		z, ok := t.zeros[n]
		if !ok {
			z = BroadcastToDims(t.zero, n, 1) // [n, 1]
			t.zeros[n] = z
		}
		indices = Add(indices, z)
	}
	return Gather(x, indices) // [n, x's other axes…]
}

// bandBiasKey identifies one constant tile: rows × cols, keys starting off keys right of the
// first row, a window of left keys (-1: none), in dtype.
type bandBiasKey struct {
	rows, off, cols, left int
	dtype                 dtypes.DType
}

// bandBiases holds the constant additive tiles of one graph, by key.
type bandBiases map[bandBiasKey]*Node

// mask sets the logits s [B, h, rows, cols] of query rows r0 … and keys c0 … that bandTile's
// tile does not let see to fill: with fill −inf by adding a constant 0/−inf tile
// [1, 1, rows, cols], shared by every tile with the same shape and c0 − r0; otherwise maskTile.
func (b bandBiases) mask(s *Node, r0, c0, left int, fill float64) *Node {
	rows, cols := s.Shape().Dim(2), s.Shape().Dim(3)
	g := s.Graph()
	if !math.IsInf(fill, -1) || (s.DType() != dtypes.Float32 && s.DType() != dtypes.Float64) {
		return maskTile(s, bandTile(g, r0, rows, c0, cols, left), fill)
	}
	key := bandBiasKey{rows: rows, off: c0 - r0, cols: cols, left: left, dtype: s.DType()}
	bias, ok := b[key]
	if !ok {
		bias = bandBias(g, s.DType(), r0, rows, c0, cols, left)
		b[key] = bias
	}
	return Add(s, bias) // [B, h, rows, cols]
}

// bandBias is bandTile as an additive constant [1, 1, rows, cols] of dtype (Float32 or
// Float64): 0 where the row sees the key, −inf elsewhere.
func bandBias(g *Graph, dtype dtypes.DType, r0, rows, c0, cols, left int) *Node {
	negInf := make([]bool, rows*cols) // row-major [rows, cols]
	for r := range rows {
		for c := range cols {
			p, j := r0+r, c0+c
			negInf[r*cols+c] = !causalSees(p, j) || (left >= 0 && j < p-left)
		}
	}
	if dtype == dtypes.Float64 {
		return ConstTensor(g, tensors.FromFlatDataAndDimensions(fillWhere(negInf, math.Inf(-1)), 1, 1, rows, cols))
	}
	return ConstTensor(g, tensors.FromFlatDataAndDimensions(fillWhere(negInf, float32(math.Inf(-1))), 1, 1, rows, cols))
}

// fillWhere returns a slice of len(where): v where where is true, 0 elsewhere.
func fillWhere[T float32 | float64](where []bool, v T) []T {
	out := make([]T, len(where))
	for i, w := range where {
		if w {
			out[i] = v
		}
	}
	return out
}
