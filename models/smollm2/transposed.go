package smollm2

import (
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/mhalib"
)

// Projections stored transposed on XLA's CPU backend.
//
// Every projection of a layer (q, k, v, o, gate, up, down) computes x·Wᵀ with Hugging Face's
// W [out, in]. XLA's CPU backend multiplies a few rows by a weight contracted on its second
// axis far slower than by the same weight stored [in, out] and contracted on its first (its
// matrix kernels pack the transposed weight per call): at the prompt of the smollm2 bench suite
// (93 tokens, 2-core AMD EPYC) the seven products of a layer took 7.5 ms as x·Wᵀ and 4.1 ms as
// x·(Wᵀ stored), down_proj alone 2.5 against 0.8 ms; one row (a decoding step) took the same
// either way (0.44 and 0.45 ms a layer). XLA folds a Transpose of the weight inside the graph
// back into the product, so the runner stores the weights transposed instead: NewRunner on
// XLA's CPU backend loads each layer matrix as "weight_t" [in, out] (the same bytes, once, at
// load), and matmul contracts its first axis. The embedding (gathered by rows, and the tied
// head) and the norms stay as they are; LoadVariables and the other backends keep W [out, in].

// transposedLeaf is the variable name of a layer matrix stored transposed, [in, out].
const transposedLeaf = "weight_t"

// layerMatrix reports whether the Hugging Face name is one of a layer's projection matrices
// (model.layers.N.….X_proj.weight).
func layerMatrix(name string) bool {
	return strings.HasPrefix(name, "model.layers.") && strings.HasSuffix(name, "_proj.weight")
}

// transposeOf makes a GoMLX tensor of the matrix t [out, in] transposed: [in, out].
func transposeOf(t *Tensor) *tensors.Tensor {
	rows, cols := t.Shape[0], t.Shape[1]
	data := make([]float32, len(t.Data))
	for r := range rows {
		for c, v := range t.Data[r*cols : (r+1)*cols] {
			data[c*rows+r] = v
		}
	}
	return tensors.FromFlatDataAndDimensions(data, cols, rows)
}

// transposedOn reports whether a float32 runner on backend stores the layer matrices
// transposed: on XLA for the CPU (on a GPU, cuBLAS reads either layout alike, and the parity
// runs there were made with W [out, in]).
func transposedOn(backend backends.Backend) bool { return mhalib.OnXLACPU(backend) }
