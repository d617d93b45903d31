// Package heads is lesson 3: splitting the model width into heads, and merging them back.
//
// Read README.md, replace the TODOs below with your code, then run `mhalab lessons check 3`.
package heads

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// SplitHeads cuts the last axis of x into numHeads heads of D/numHeads features and moves the
// heads in front of the sequence axis:
//
//	x: [B, L, D] → [B, h, L, D/h]      out[b, n, l, d] = x[b, l, n·(D/h) + d]
//
// D is divisible by numHeads.
func SplitHeads(x *Node, numHeads int) *Node {
	// TODO: split the last axis, then put the heads axis second.
	return x
}

// MergeHeads is the inverse of SplitHeads, concatenating the heads along the features:
//
//	x: [B, h, L, dk] → [B, L, h·dk]     out[b, l, n·dk + d] = x[b, n, l, d]
func MergeHeads(x *Node) *Node {
	// TODO: undo SplitHeads.
	return x
}
