package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// Differentiable selection and concatenation.
//
// The pure-Go backend cannot differentiate Slice nor Concatenate (their gradients need Pad,
// which it lacks). Gather can be differentiated on every backend (its gradient is ScatterSum),
// so mhalib selects and joins tensors with Gather and Where only. The functions here are the
// only place that does it.

// takeAxis returns x with the given indices of axis selected, in order (indices may repeat).
// The result has the shape of x with axis resized to len(indices).
func takeAxis(x *Node, axis int, indices []int) *Node {
	g := x.Graph()
	rank := x.Rank()
	if axis < 0 {
		axis += rank
	}
	// Gather picks along the leading axis: move axis to the front.
	toFront := make([]int, 0, rank)
	toFront = append(toFront, axis)
	for a := range rank {
		if a != axis {
			toFront = append(toFront, a)
		}
	}
	if axis != 0 {
		x = TransposeAllDims(x, toFront...) // [x.dim(axis), other axes...]
	}
	idx := make([][]int32, len(indices))
	for i, j := range indices {
		idx[i] = []int32{int32(j)}
	}
	out := Gather(x, Const(g, idx)) // [len(indices), other axes...]
	if axis != 0 {
		back := make([]int, rank)
		for a := range rank {
			switch {
			case a < axis:
				back[a] = a + 1
			case a == axis:
				back[a] = 0
			default:
				back[a] = a
			}
		}
		out = TransposeAllDims(out, back...) // x's axes, axis resized
	}
	return out
}

// takeRange returns x[..., from:from+n, ...] along axis: a slice, built with Gather.
func takeRange(x *Node, axis, from, n int) *Node {
	if axis < 0 {
		axis += x.Rank()
	}
	if from == 0 && n == x.Shape().Dimensions[axis] {
		return x
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = from + i
	}
	return takeAxis(x, axis, idx)
}

// takeIndex returns x with axis removed, keeping entry i of it: x[..., i, ...].
func takeIndex(x *Node, axis, i int) *Node {
	if axis < 0 {
		axis += x.Rank()
	}
	if axis == 0 {
		// Gather with an index vector of length 1 drops the axis directly.
		return Gather(x, Const(x.Graph(), []int32{int32(i)})) // x's shape without axis 0
	}
	return Squeeze(takeAxis(x, axis, []int{i}), axis)
}

// concatAxis joins parts along axis, like Concatenate, but differentiable on every backend:
// each part is gathered to the full length (indices clamped) and Where keeps its own segment.
// All parts must have the same shape except along axis.
func concatAxis(parts []*Node, axis int) *Node {
	if len(parts) == 1 {
		return parts[0]
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
