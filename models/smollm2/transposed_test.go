package smollm2

import (
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
)

func TestTransposeOf(t *testing.T) {
	got := transposeOf(&Tensor{Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}})
	if dims := got.Shape().Dimensions; !slices.Equal(dims, []int{3, 2}) {
		t.Fatalf("shape %v, want [3 2]", dims)
	}
	if data := tensors.MustCopyFlatData[float32](got); !slices.Equal(data, []float32{1, 4, 2, 5, 3, 6}) {
		t.Errorf("data %v, want [1 4 2 5 3 6]", data)
	}
}

// A float32 runner on XLA's CPU backend holds every layer matrix transposed ("weight_t" [in,
// out], and no "weight"); on the other backends as it is. The parity tests (logits and greedy
// tokens against transformers) run on the runners this checks.
func TestRunnerLayerMatrixLayout(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		if strings.HasSuffix(t.Name(), "/xla:cpu") && !transposedOn(backend) {
			t.Fatalf("transposedOn(xla:cpu %q) = false, want true", backend.Description())
		}
		r := testRunner(t, backend)
		want := transposedOn(backend) && !r.Packed()
		checked := 0
		for name, w := range r.Model.Weights.Tensors {
			if !layerMatrix(name) {
				continue
			}
			scope, leaf := splitName(name)
			vt, v := r.ctx.GetVariableByScopeAndName(scope, transposedLeaf), r.ctx.GetVariableByScopeAndName(scope, leaf)
			switch {
			case r.Packed() && vt != nil:
				t.Fatalf("%s: a packed runner holds %s", name, transposedLeaf)
			case r.Packed():
				continue // in a quant carrier, its own or a stacked one (fused.go)
			case want && (vt == nil || v != nil):
				t.Fatalf("%s: %s %v, %s %v; want only %s", name, transposedLeaf, vt != nil, leaf, v != nil, transposedLeaf)
			case want && !slices.Equal(vt.Shape().Dimensions, []int{w.Shape[1], w.Shape[0]}):
				t.Fatalf("%s: %s shape %v, want [in, out] = [%d %d]", name, transposedLeaf, vt.Shape().Dimensions, w.Shape[1], w.Shape[0])
			case !want && (vt != nil || v == nil):
				t.Fatalf("%s: %s %v, %s %v; want only %s", name, transposedLeaf, vt != nil, leaf, v != nil, leaf)
			}
			checked++
		}
		if !r.Packed() && checked != 7*r.Model.Config.NumHiddenLayers {
			t.Errorf("checked %d layer matrices, want 7 a layer × %d layers", checked, r.Model.Config.NumHiddenLayers)
		}
	})
}
