package mhatest

import (
	"fmt"
	"math"
)

// Linear applies a PyTorch-layout linear map to the last axis of x:
//
//	y[..., o] = Σ_i x[..., i] · w[o, i] + b[o]      (y = x·Wᵀ + b)
//
// x: [..., in], w: [out, in], b: [out] or nil (no bias) → y: [..., out].
// It panics with an error value on inconsistent shapes.
func Linear(x, w, b *Tensor) *Tensor {
	if x.Rank() < 1 || w.Rank() != 2 || x.Shape[x.Rank()-1] != w.Shape[1] {
		panic(fmt.Errorf("mhatest: Linear: x shape %v does not match weight shape %v (want x [..., in], weight [out, in])", x.Shape, w.Shape))
	}
	out, in := w.Shape[0], w.Shape[1]
	if b != nil && (b.Rank() != 1 || b.Shape[0] != out) {
		panic(fmt.Errorf("mhatest: Linear: bias shape %v, want [%d] for weight shape %v", b.Shape, out, w.Shape))
	}
	rows := x.Size() / in // all leading axes flattened
	yShape := append(append([]int{}, x.Shape[:x.Rank()-1]...), out)
	y := New(yShape...)
	for r := 0; r < rows; r++ {
		for o := 0; o < out; o++ {
			sum := 0.0
			if b != nil {
				sum = b.Data[o]
			}
			for i := 0; i < in; i++ {
				sum += x.Data[r*in+i] * w.Data[o*in+i]
			}
			y.Data[r*out+o] = sum
		}
	}
	return y
}

// XavierBound is the bound a of Xavier (Glorot) uniform initialisation,
// U(−a, a) with a = √(6 / (fanIn + fanOut)). PyTorch's nn.MultiheadAttention
// initialises in_proj_weight this way, treating the fused [3E, E] matrix as
// one: fanIn = E, fanOut = 3E.
func XavierBound(fanIn, fanOut int) float64 {
	return math.Sqrt(6 / float64(fanIn+fanOut))
}

// KaimingUniformBound is the bound of PyTorch's default nn.Linear weight
// initialisation, kaiming_uniform_(a=√5):
//
//	gain = √(2 / (1 + a²)) = √(1/3),  bound = gain·√(3 / fanIn) = 1/√fanIn.
//
// nn.Linear's bias uses the same bound, U(−1/√fanIn, 1/√fanIn).
func KaimingUniformBound(fanIn int) float64 {
	return math.Sqrt(6 / ((1 + 5) * float64(fanIn)))
}

// LayerNorm normalises x over its last axis, as torch.nn.LayerNorm:
//
//	y = (x − mean) / √(var + eps) · weight + bias
//
// with the biased variance (divide by n, not n−1).
// x: [..., n], weight, bias: [n] or nil (nil weight = 1, nil bias = 0) → [..., n].
// It panics with an error value on inconsistent shapes.
func LayerNorm(x, weight, bias *Tensor, eps float64) *Tensor {
	n := x.Shape[x.Rank()-1]
	for _, p := range []struct {
		name string
		t    *Tensor
	}{{"weight", weight}, {"bias", bias}} {
		if p.t != nil && !SameShape(p.t.Shape, []int{n}) {
			panic(fmt.Errorf("mhatest: LayerNorm: %s shape %v, want [%d] for x shape %v", p.name, p.t.Shape, n, x.Shape))
		}
	}
	y := New(x.Shape...)
	rows := x.Size() / n
	for r := 0; r < rows; r++ {
		row := x.Data[r*n : (r+1)*n]
		mean := 0.0
		for _, v := range row {
			mean += v
		}
		mean /= float64(n)
		variance := 0.0
		for _, v := range row {
			variance += (v - mean) * (v - mean)
		}
		variance /= float64(n)
		inv := 1 / math.Sqrt(variance+eps)
		for i, v := range row {
			out := (v - mean) * inv
			if weight != nil {
				out *= weight.Data[i]
			}
			if bias != nil {
				out += bias.Data[i]
			}
			y.Data[r*n+i] = out
		}
	}
	return y
}
