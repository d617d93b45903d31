package quant

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/graph"
)

// Dot returns x·Wᵀ for x [..., cols] and the carrier node w [Bt, C, N] of a rows × cols matrix
// W: [..., rows]. Run it only where Available says (see the package doc).
//
//	x [..., cols] → [M, cols] → [M, Bt, C] → lhs [Bt, M, C]
//	DotGeneral(lhs, contract 2, batch 0; w [Bt, C, N], contract 1, batch 0) → [Bt, M, N]
//	→ [M, Bt, N] → y [..., rows]     (row r = bt·N + n)
func Dot(x, w *graph.Node) *graph.Node {
	if w.Rank() != 3 {
		panic(fmt.Errorf("quant: carrier shape %s: want [Bt, C, N]", w.Shape()))
	}
	bt, c, n := w.Shape().Dim(0), w.Shape().Dim(1), w.Shape().Dim(2)
	cols, rows := bt*c, bt*n
	if x.Shape().Dim(-1) != cols {
		panic(fmt.Errorf("quant: x shape %s: want [..., %d] for a carrier of a [%d, %d] matrix", x.Shape(), cols, rows, cols))
	}
	outDims := append(x.Shape().Clone().Dimensions[:x.Rank()-1], rows)
	m := x.Shape().Size() / cols
	var lhs *graph.Node
	if m == 1 {
		lhs = graph.Reshape(x, bt, 1, c) // [Bt, 1, C]
	} else {
		lhs = graph.TransposeAllDims(graph.Reshape(x, m, bt, c), 1, 0, 2) // [Bt, M, C]
	}
	y := graph.DotGeneral(lhs, []int{2}, []int{0}, w, []int{1}, []int{0}) // [Bt, M, N]
	if m > 1 {
		y = graph.TransposeAllDims(y, 1, 0, 2) // [M, Bt, N]
	}
	return graph.Reshape(y, outDims...) // [..., rows]
}
