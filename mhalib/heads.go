package mhalib

import (
	"fmt"
	"slices"

	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// Heads. Multi-head attention cuts the model width D into h heads and attends in each
// separately ("Attention Is All You Need" §3.2.2). With D divisible by h every head has
// dk = D/h features and splitting is a reshape. With uneven sizes (D = 440 = 4×100 + 40) each
// head n owns the columns [Σ_{m<n} d_m, Σ_{m≤n} d_m) and uses its own scale 1/√d_n.

// SplitHeads cuts the last axis into numHeads equal heads:
//
//	x: [B, L, D] → [B, h, L, D/h]
//
// It panics with an *ArgumentError if D is not divisible by numHeads (use SplitUnevenHeads).
func SplitHeads(x *Node, numHeads int) *Node {
	if x.Rank() != 3 {
		panicArg("x", "shape %s: SplitHeads wants rank 3 [batch, length, width]", x.Shape())
	}
	dims := x.Shape().Dimensions
	batch, length, width := dims[0], dims[1], dims[2]
	if numHeads <= 0 || width%numHeads != 0 {
		panicArg("numHeads", "%d does not divide the width %d of x shape %s (give head sizes for an uneven split)",
			numHeads, width, x.Shape())
	}
	x = Reshape(x, batch, length, numHeads, width/numHeads) // [B, L, h, dk]
	return TransposeAllDims(x, 0, 2, 1, 3)                  // [B, h, L, dk]
}

// MergeHeads is the inverse of SplitHeads, concatenating the heads:
//
//	x: [B, h, L, dk] → [B, L, h·dk]
func MergeHeads(x *Node) *Node {
	if x.Rank() != 4 {
		panicArg("x", "shape %s: MergeHeads wants rank 4 [batch, heads, length, headDim]", x.Shape())
	}
	dims := x.Shape().Dimensions
	batch, heads, length, dk := dims[0], dims[1], dims[2], dims[3]
	x = TransposeAllDims(x, 0, 2, 1, 3)        // [B, L, h, dk]
	return Reshape(x, batch, length, heads*dk) // [B, L, h·dk]
}

// HeadSizesFor splits dModel into heads of headDim features and one smaller last head for the
// remainder: HeadSizesFor(440, 100) = [100 100 100 100 40]. It panics with an *ArgumentError
// if either argument is not positive.
func HeadSizesFor(dModel, headDim int) []int {
	if dModel <= 0 || headDim <= 0 {
		panicArg("HeadSizesFor", "dModel=%d and headDim=%d must be positive", dModel, headDim)
	}
	var sizes []int
	for rest := dModel; rest > 0; rest -= headDim {
		sizes = append(sizes, min(headDim, rest))
	}
	return sizes
}

// HeadStrategy is how uneven heads are laid out for the attention computation. All three give
// the same output and gradients; they differ in how much is batched.
type HeadStrategy int

const (
	// HeadsLoop splits into a list with one tensor per head and loops over the heads.
	HeadsLoop HeadStrategy = iota
	// HeadsSlice slices runs of consecutive equal-size heads and batches each run
	// ([100 100 100 100 40] → one [B, 4, L, 100] block and one [B, 1, L, 40] block).
	HeadsSlice
	// HeadsPad pads every head with zeros to the largest size and batches all heads in one
	// [B, h, L, max d] tensor. Zero padding of q and k adds nothing to q·kᵀ, zero padding of v
	// gives zero output columns that merging drops; each head keeps its own scale 1/√d_n.
	HeadsPad
)

// String names the strategy.
func (s HeadStrategy) String() string {
	switch s {
	case HeadsLoop:
		return "HeadsLoop"
	case HeadsSlice:
		return "HeadsSlice"
	case HeadsPad:
		return "HeadsPad"
	}
	return fmt.Sprintf("HeadStrategy(%d)", int(s))
}

// headGroup is a block of consecutive heads computed together: heads [first, first+count),
// each stored with size features (its real sizes are sizes[first:first+count]).
type headGroup struct {
	first, count, size int
}

// headGroups returns the blocks a strategy computes, in head order.
func headGroups(sizes []int, s HeadStrategy) []headGroup {
	switch s {
	case HeadsLoop:
		groups := make([]headGroup, len(sizes))
		for n, d := range sizes {
			groups[n] = headGroup{first: n, count: 1, size: d}
		}
		return groups
	case HeadsSlice:
		var groups []headGroup
		for n, d := range sizes {
			if len(groups) > 0 && groups[len(groups)-1].size == d {
				groups[len(groups)-1].count++
				continue
			}
			groups = append(groups, headGroup{first: n, count: 1, size: d})
		}
		return groups
	case HeadsPad:
		return []headGroup{{first: 0, count: len(sizes), size: slices.Max(sizes)}}
	}
	panicArg("HeadStrategy", "unknown value %d", int(s))
	return nil
}

// checkHeadSizes validates uneven head sizes against the width.
func checkHeadSizes(sizes []int, width int) {
	if len(sizes) == 0 {
		panicArg("HeadSizes", "empty list of head sizes for width %d", width)
	}
	sum := 0
	for _, d := range sizes {
		if d <= 0 {
			panicArg("HeadSizes", "%v has a size ≤ 0", sizes)
		}
		sum += d
	}
	if sum != width {
		panicArg("HeadSizes", "%v sum to %d, but the width (embed dim) is %d", sizes, sum, width)
	}
}

// SplitUnevenHeads cuts x [B, L, D] into heads of the given sizes (Σ sizes = D), laid out by s.
// It returns one tensor per block of heads computed together, in head order:
//
//	HeadsLoop:  len(sizes) tensors, tensor n is [B, 1, L, sizes[n]]
//	HeadsSlice: one tensor per run of equal consecutive sizes, [B, run length, L, size]
//	HeadsPad:   one tensor [B, h, L, max(sizes)], head n zero beyond sizes[n]
//
// Every selection is a Gather, so gradients work on every backend (including the pure-Go one,
// which cannot differentiate Slice or Concatenate).
func SplitUnevenHeads(x *Node, sizes []int, s HeadStrategy) []*Node {
	if x.Rank() != 3 {
		panicArg("x", "shape %s: SplitUnevenHeads wants rank 3 [batch, length, width]", x.Shape())
	}
	checkHeadSizes(sizes, x.Shape().Dim(-1))
	offsets := headOffsets(sizes)
	dims := x.Shape().Dimensions
	batch, length := dims[0], dims[1]
	var parts []*Node
	for _, grp := range headGroups(sizes, s) {
		// Column c of head first+n in the block reads column offsets[first+n] + min(c, d_n − 1) of x.
		idx := make([]int, 0, grp.count*grp.size)
		valid := make([]bool, 0, grp.count*grp.size)
		padded := false
		for n := grp.first; n < grp.first+grp.count; n++ {
			for c := range grp.size {
				idx = append(idx, offsets[n]+min(c, sizes[n]-1))
				valid = append(valid, c < sizes[n])
				padded = padded || c >= sizes[n]
			}
		}
		part := takeAxis(x, 2, idx) // [B, L, count·size]
		if padded {
			cond := Reshape(Const(x.Graph(), valid), 1, 1, len(valid)) // [1, 1, count·size]
			cond = BroadcastToDims(cond, part.Shape().Dimensions...)   // [B, L, count·size]
			part = Where(cond, part, ZerosLike(part))                  // padding columns → 0
		}
		part = Reshape(part, batch, length, grp.count, grp.size) // [B, L, count, size]
		part = TransposeAllDims(part, 0, 2, 1, 3)                // [B, count, L, size]
		parts = append(parts, part)
	}
	return parts
}

// MergeUnevenHeads is the inverse of SplitUnevenHeads: it joins the blocks of heads
// (as SplitUnevenHeads laid them out with the same sizes and strategy) back to [B, L, Σ sizes],
// dropping padding columns.
func MergeUnevenHeads(parts []*Node, sizes []int, s HeadStrategy) *Node {
	groups := headGroups(sizes, s)
	if len(parts) != len(groups) {
		panicArg("parts", "%d blocks, but sizes %v with %s make %d", len(parts), sizes, s, len(groups))
	}
	flat := make([]*Node, len(parts))
	for g, part := range parts {
		grp := groups[g]
		dims := part.Shape().Dimensions
		if len(dims) != 4 || dims[1] != grp.count || dims[3] != grp.size {
			panicArg("parts", "block %d shape %s: want [B, %d, L, %d]", g, part.Shape(), grp.count, grp.size)
		}
		batch, length := dims[0], dims[2]
		p := TransposeAllDims(part, 0, 2, 1, 3)           // [B, L, count, size]
		p = Reshape(p, batch, length, grp.count*grp.size) // [B, L, count·size]
		// Keep the real columns of each head.
		var idx []int
		for n := range grp.count {
			for c := range sizes[grp.first+n] {
				idx = append(idx, n*grp.size+c)
			}
		}
		if len(idx) != grp.count*grp.size {
			p = takeAxis(p, 2, idx) // [B, L, Σ sizes of the block]
		}
		flat[g] = p
	}
	return concatAxis(flat, 2) // [B, L, Σ sizes]
}

// headOffsets returns the first column of each head.
func headOffsets(sizes []int) []int {
	offsets := make([]int, len(sizes))
	for n := 1; n < len(sizes); n++ {
		offsets[n] = offsets[n-1] + sizes[n-1]
	}
	return offsets
}
