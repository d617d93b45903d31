package mhalib

import (
	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Slicing and concatenation, differentiable on every backend: the one mechanism mhalib uses.
//
// The pure-Go backend cannot differentiate Slice nor Concatenate (their gradients need Pad,
// which it lacks). Gather can be differentiated on every backend (its gradient is ScatterSum).
// So sliceAxis and concatAxis use Slice and Concatenate where the backend has Pad (XLA), and
// Gather and Where elsewhere; takeAxis selects arbitrary indices with Gather. The
// functions here are the only place that slices or joins tensors.

// differentiableSlices reports whether g's backend can differentiate Slice and Concatenate
// (their gradients are built with Pad).
func differentiableSlices(g *Graph) bool {
	return g.Backend().Capabilities().Operations[backends.OpTypePad]
}

// takeAxis returns x with the given indices of axis selected, in order (indices may repeat).
// The result has the shape of x with axis resized to len(indices).
func takeAxis(x *Node, axis int, indices []int) *Node {
	g := x.Graph()
	rank := x.Rank()
	if axis < 0 {
		axis += rank
	}
	// Gather picks along the leading axis: move axis to the front.
	if axis != 0 {
		x = TransposeAllDims(x, axisToFront(rank, axis)...) // [x.dim(axis), other axes...]
	}
	idx := make([][]int32, len(indices))
	for i, j := range indices {
		idx[i] = []int32{int32(j)}
	}
	out := Gather(x, Const(g, idx)) // [len(indices), other axes...]
	if axis != 0 {
		out = TransposeAllDims(out, axisFromFront(rank, axis)...) // x's axes, axis resized
	}
	return out
}

// axisToFront is the permutation that moves axis to the front of rank axes, keeping the others
// in order: [axis, 0, 1, …].
func axisToFront(rank, axis int) []int {
	perm := make([]int, 0, rank)
	perm = append(perm, axis)
	for a := range rank {
		if a != axis {
			perm = append(perm, a)
		}
	}
	return perm
}

// axisFromFront is axisToFront's inverse: the leading axis goes back to position axis.
func axisFromFront(rank, axis int) []int {
	perm := make([]int, rank)
	for a := range rank {
		switch {
		case a < axis:
			perm[a] = a + 1
		case a == axis:
			perm[a] = 0
		default:
			perm[a] = a
		}
	}
	return perm
}

// sliceAxis returns x[..., from:from+n, ...] along axis (x itself when that is all of it):
// Slice where the backend can differentiate it, else a Gather.
func sliceAxis(x *Node, axis, from, n int) *Node {
	if axis < 0 {
		axis += x.Rank()
	}
	if from == 0 && n == x.Shape().Dimensions[axis] {
		return x
	}
	if differentiableSlices(x.Graph()) {
		return SliceAxis(x, axis, AxisRange(from, from+n))
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = from + i
	}
	return takeAxis(x, axis, idx)
}

// axisSlicer cuts many slices of one tensor along one axis (FlashAttention's key blocks and
// query rows). Where the backend can differentiate Slice it is sliceAxis; elsewhere x is
// transposed once with axis in front ([x.dim(axis), other axes…]) and each slice is a Gather of
// contiguous rows and a transpose of that slice only, instead of sliceAxis's transposes of the
// whole of x for every slice.
type axisSlicer struct {
	x, front *Node // x, and x with axis moved to the front (nil where Slice is used)
	axis     int
}

// newAxisSlicer prepares x for slices along axis.
func newAxisSlicer(x *Node, axis int) *axisSlicer {
	if axis < 0 {
		axis += x.Rank()
	}
	s := &axisSlicer{x: x, axis: axis}
	if axis != 0 && !differentiableSlices(x.Graph()) {
		s.front = TransposeAllDims(x, axisToFront(x.Rank(), axis)...) // [x.dim(axis), other axes…]
	}
	return s
}

// slice returns x[..., from:from+n, ...] along the slicer's axis, like sliceAxis.
func (s *axisSlicer) slice(from, n int) *Node {
	x, axis := s.x, s.axis
	if s.front == nil || (from == 0 && n == x.Shape().Dimensions[axis]) {
		return sliceAxis(x, axis, from, n)
	}
	idx := make([][]int32, n)
	for i := range idx {
		idx[i] = []int32{int32(from + i)}
	}
	rows := Gather(s.front, Const(x.Graph(), idx))                  // [n, other axes…]
	return TransposeAllDims(rows, axisFromFront(x.Rank(), axis)...) // x's axes, axis resized to n
}

// concatAxis joins parts along axis, like Concatenate (which it uses where the backend can
// differentiate it). Elsewhere each part is gathered to the full length (indices clamped) and
// Where keeps its own segment. All parts must have the same shape except along axis.
func concatAxis(parts []*Node, axis int) *Node {
	if len(parts) == 1 {
		return parts[0]
	}
	if differentiableSlices(parts[0].Graph()) {
		return Concatenate(parts, axis)
	}
	rank := parts[0].Rank()
	if axis < 0 {
		axis += rank
	}
	total := 0
	for _, p := range parts {
		total += p.Shape().Dimensions[axis]
	}
	g := parts[0].Graph()
	var out *Node
	offset := 0
	for _, p := range parts {
		size := p.Shape().Dimensions[axis]
		idx := make([]int, total)
		inSegment := make([]bool, total)
		for j := range total {
			local := min(max(j-offset, 0), size-1)
			idx[j] = local
			inSegment[j] = j >= offset && j < offset+size
		}
		spread := takeAxis(p, axis, idx) // p's shape with axis resized to total
		if out == nil {
			out = spread
		} else {
			condDims := make([]int, rank)
			for a := range condDims {
				condDims[a] = 1
			}
			condDims[axis] = total
			cond := Reshape(Const(g, inSegment), condDims...)          // [1, …, total, …, 1]
			cond = BroadcastToDims(cond, spread.Shape().Dimensions...) // spread's shape
			out = Where(cond, spread, out)
		}
		offset += size
	}
	return out
}

// joinFlat flattens parts, joins them in order, fills the end with zeros to a multiple of
// width and returns the result as [n, width]. Its gradient takes slices of the joined
// gradient, which every backend runs (Concatenate's gradient is Slice, whose own gradient, Pad,
// is the one the pure-Go backend lacks).
func joinFlat(parts []*Node, width int) *Node {
	flat := make([]*Node, 0, len(parts)+1)
	total := 0
	for _, p := range parts {
		flat = append(flat, Reshape(p, p.Shape().Size()))
		total += p.Shape().Size()
	}
	if rest := (width - total%width) % width; rest > 0 {
		flat = append(flat, Zeros(parts[0].Graph(), shapes.Make(parts[0].DType(), rest)))
		total += rest
	}
	return Reshape(Concatenate(flat, 0), total/width, width) // [n, width]
}
