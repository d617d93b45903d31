// Package rope is lesson 12: rotary position embedding (RoPE), Hugging Face's half-split form.
//
// Read README.md, replace the TODO below with your code, then run `mhalab lessons check 12`.
package rope

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// RoPE rotates the first rotaryDims features of every row of x [B, H, L, d] (the rest pass
// unchanged): row l is at position offset + l, and features k and k + rotaryDims/2 form a pair
// rotated by the angle position · theta^(−2k/rotaryDims). Returns [B, H, L, d].
func RoPE(x *Node, theta float64, rotaryDims, offset int) *Node {
	// TODO: the angles, their cos and sin, rotate_half, and x·cos + rotate_half(x)·sin.
	return x
}
