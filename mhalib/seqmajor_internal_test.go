package mhalib

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
)

// TestSeqMajorHeads: plain attention with q and k read through the projections' axes
// (seqmajor.go) is attention of SplitHeads' transposed copies — on every backend, with and without the causal
// mask, with and without the weights, with a scale that is not a power of two. The forward
// values must be equal bit for bit (each score and output the same sum of the same products in
// the same order: the products only read their operands at other strides); the gradients
// (other DotGenerals in autodiff, summed in other orders) within 4·(L+dk)·u·max|g|.
func TestSeqMajorHeads(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(7, 29))
		const B, L, h, dk = 2, 37, 3, 8
		x := make([]float32, B*L*h*dk)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		in := tensors.FromFlatDataAndDimensions(x, B, L, h*dk)
		for _, c := range []struct {
			name        string
			causal      Causal
			scale       float64
			withWeights bool
		}{
			{"plain", NoCausal, 1 / math.Sqrt(dk), false},
			{"causal", CausalTopLeft, 1 / math.Sqrt(dk), false},
			{"causal_weights", CausalTopLeft, 1 / math.Sqrt(dk), true},
			{"scale_0.3", NoCausal, 0.3, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				run := func(seq bool) []*tensors.Tensor {
					return MustExecOnceN(backend, func(x *Node) []*Node {
						q := MulScalar(x, 1.5) // [B, L, h·dk]
						k := Sin(x)            // [B, L, h·dk]
						v := Cos(x)            // [B, L, h·dk]
						ms := &maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L, causal: c.causal, fill: math.Inf(-1)}
						var qh, kh headsOperand
						if seq {
							qh, kh = seqMajorHeads(q, h), seqMajorHeads(k, h)
						} else {
							qh, kh = headMajor(SplitHeads(q, h)), headMajor(SplitHeads(k, h))
						}
						vh := SplitHeads(v, h)
						out, w := attendHeads(qh, kh, vh, []float64{c.scale}, ms, dropoutSpec{}, c.withWeights)
						loss := ReduceAllSum(Mul(out, Sin(MulScalar(out, 3)))) // scalar
						outs := []*Node{out}
						if w != nil {
							outs = append(outs, w)
						}
						return append(outs, Gradient(loss, x)[0])
					}, in)
				}
				seq, head := run(true), run(false)
				for i := range seq {
					a, b := flatF32(seq[i]), flatF32(head[i])
					grad := i == len(seq)-1
					biggest := 0.0
					for _, v := range b {
						biggest = max(biggest, math.Abs(float64(v)))
					}
					bound := 4 * float64(L+dk) * 0x1p-24 * biggest
					for j := range a {
						if !grad && math.Float32bits(a[j]) != math.Float32bits(b[j]) {
							t.Fatalf("output %d [%d]: sequence-major %g, head-major %g (want equal bits)", i, j, a[j], b[j])
						}
						if d := math.Abs(float64(a[j]) - float64(b[j])); grad && !(d <= bound) {
							t.Fatalf("gradient [%d]: sequence-major %g, head-major %g: |Δ| %.3g > %.3g", j, a[j], b[j], d, bound)
						}
					}
				}
			})
		}
	})
}

func flatF32(x *tensors.Tensor) []float32 {
	var out []float32
	tensors.ConstFlatData(x, func(flat []float32) { out = append(out, flat...) })
	return out
}
