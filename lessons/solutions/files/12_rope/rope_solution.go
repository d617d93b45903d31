//go:build solution

package rope

import (
	"math"

	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// RoPE rotates the first rotaryDims features of every row of x [B, H, L, d] (the rest pass
// unchanged): row l is at position offset + l, and features k and k + rotaryDims/2 form a pair
// rotated by the angle position · theta^(−2k/rotaryDims). Returns [B, H, L, d].
func RoPE(x *Node, theta float64, rotaryDims, offset int) *Node {
	L, d := x.Shape().Dim(2), x.Shape().Dim(3)
	half := rotaryDims / 2
	// cos and sin of every (position, feature), computed on the host in float64: [L, d].
	cos, sin := make([][]float64, L), make([][]float64, L)
	for l := range cos {
		cos[l], sin[l] = make([]float64, d), make([]float64, d)
		for e := 0; e < d; e++ {
			if e >= rotaryDims {
				cos[l][e] = 1 // pass-through features: x·1 + anything·0
				continue
			}
			angle := float64(offset+l) * math.Pow(theta, -2*float64(e%half)/float64(rotaryDims))
			cos[l][e], sin[l][e] = math.Cos(angle), math.Sin(angle)
		}
	}
	g := x.Graph()
	c := Reshape(ConvertDType(Const(g, cos), x.DType()), 1, 1, L, d) // [1, 1, L, d]
	s := Reshape(ConvertDType(Const(g, sin), x.DType()), 1, 1, L, d) // [1, 1, L, d]
	// rotate_half on the rotated features: (−x[half:rd], x[:half]), then the rest as it is.
	x1 := SliceAxis(x, 3, AxisRange(0, half))
	x2 := SliceAxis(x, 3, AxisRange(half, rotaryDims))
	parts := []*Node{Neg(x2), x1}
	if rotaryDims < d {
		parts = append(parts, SliceAxis(x, 3, AxisRange(rotaryDims, d)))
	}
	rot := Concatenate(parts, 3)       // [B, H, L, d]
	return Add(Mul(x, c), Mul(rot, s)) // [B, H, L, d]
}
