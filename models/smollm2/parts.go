package smollm2

import (
	"math"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// splitName splits a Hugging Face parameter name "a.b.c.weight" into the scope "/a/b/c" and
// the variable name "weight".
func splitName(name string) (scope, leaf string) {
	i := strings.LastIndexByte(name, '.')
	return "/" + replaceDots(name[:i]), name[i+1:]
}

func replaceDots(s string) string { return strings.ReplaceAll(s, ".", "/") }

// tensorOf makes a GoMLX tensor of t.
func tensorOf(t *Tensor) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(t.Data, t.Shape...)
}

// rmsNormLocal is RMSNorm: x / √(mean(x²) + eps) ⊙ w over the last axis, x [..., D], w [D].
func rmsNormLocal(x, w *Node, eps float64) *Node {
	ms := ReduceAndKeep(Square(x), ReduceMean, -1) // [..., 1]
	y := Div(x, Sqrt(AddScalar(ms, eps)))          // [..., D]
	return Mul(y, ExpandLeftToRank(w, y.Rank()))   // [..., D]
}

// ropeLocal rotates x [B, h, n, hd] at positions [pos, pos+n), half-split pairs (i, i + hd/2):
// x·cos + rotate_half(x)·sin, rotate_half(x) = (−x₂, x₁), angles p·θ^(−2i/hd) in float64.
func ropeLocal(x, pos *Node, theta float64) *Node {
	g := x.Graph()
	n, hd := x.Shape().Dim(2), x.Shape().Dim(3)
	half := hd / 2
	freq := make([]float64, hd)
	for i := 0; i < half; i++ {
		freq[i] = math.Pow(theta, -2*float64(i)/float64(hd))
		freq[i+half] = freq[i]
	}
	p := Add(Iota(g, shapes.Make(dtypes.Int32, n, 1), 0), pos)                  // [n, 1]
	angles := Mul(ConvertDType(p, dtypes.Float64), Const(g, [][]float64{freq})) // [n, hd]
	cos := Reshape(ConvertDType(Cos(angles), x.DType()), 1, 1, n, hd)           // [1, 1, n, hd]
	sin := Reshape(ConvertDType(Sin(angles), x.DType()), 1, 1, n, hd)           // [1, 1, n, hd]
	x1 := Slice(x, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, half))   // [B, h, n, hd/2]
	x2 := Slice(x, AxisRange(), AxisRange(), AxisRange(), AxisRange(half, hd))  // [B, h, n, hd/2]
	rot := Concatenate([]*Node{Neg(x2), x1}, 3)                                 // [B, h, n, hd]
	return Add(Mul(x, cos), Mul(rot, sin))
}
