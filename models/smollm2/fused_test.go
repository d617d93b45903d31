package smollm2

import (
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/models/quant"
)

// TestFusedEqualsSeparate: the stacked carriers of fused.go (q, k, v and gate, up of a layer)
// multiply x exactly as the separate ones do — the same bits, one token (the matrix–vector
// kernel) and five (the prefill's) — so stacking changes no logit. A wrong order of the parts
// or a misaligned row is off by whole units.
func TestFusedEqualsSeparate(t *testing.T) {
	backend := packedGoBackend(t)
	m := testModel(t)
	D := m.Config.HiddenSize
	rng := rand.New(rand.NewPCG(29, 4))
	for _, f := range fusions(layerPath(7)) {
		stacked, ok := m.Weights.stack(f[1:])
		if !ok {
			t.Fatalf("%s: parts not stacked", f[0])
		}
		carriers := []*tensors.Tensor{carrierTensor(t, stacked)}
		for _, part := range f[1:] {
			pm, _ := m.Weights.packed(part + ".weight")
			carriers = append(carriers, carrierTensor(t, pm))
		}
		for _, n := range []int{1, 5} {
			x := make([]float32, n*D)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			out := MustExecOnceN(backend, func(in []*Node) []*Node {
				parts := make([]*Node, len(in)-2)
				for i, c := range in[2:] {
					parts[i] = quant.Dot(in[0], c) // [1, n, rows_i]
				}
				return []*Node{quant.Dot(in[0], in[1]), Concatenate(parts, 2)} // [1, n, Σ rows_i] ×2
			}, append([]any{tensors.FromFlatDataAndDimensions(x, 1, n, D)}, anys(carriers)...)...)
			got, want := tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
			if len(got) != stacked.Rows*n {
				t.Fatalf("%s: %d outputs, want %d", f[0], len(got), stacked.Rows*n)
			}
			diff := 0
			for i := range got {
				if got[i] != want[i] {
					diff++
				}
			}
			if diff > 0 {
				t.Errorf("%s, %d tokens: %d of %d outputs differ from the separate products", f[0], n, diff, len(got))
			}
		}
	}
}

func carrierTensor(t *testing.T, pm *quant.Matrix) *tensors.Tensor {
	t.Helper()
	words, shape, err := pm.Carrier()
	if err != nil {
		t.Fatal(err)
	}
	return tensors.FromFlatDataAndDimensions(words, shape[:]...)
}

func anys(ts []*tensors.Tensor) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}
