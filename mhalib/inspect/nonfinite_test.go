package inspect

import (
	"math"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func TestNonFinite(t *testing.T) {
	x := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, float32(math.Inf(1)), 5, float32(math.NaN())}, 2, 3)
	n, first, err := NonFinite(x)
	if err != nil || n != 2 || !slices.Equal(first, []int{1, 0}) {
		t.Errorf("NonFinite = %d, %v, %v; want 2, [1 0]", n, first, err)
	}
	n, first, err = NonFinite(tensors.FromFlatDataAndDimensions([]float64{1, 2}, 2))
	if err != nil || n != 0 || first != nil {
		t.Errorf("finite: %d, %v, %v", n, first, err)
	}
	if _, _, err := NonFinite(tensors.FromFlatDataAndDimensions([]int32{1}, 1)); err == nil {
		t.Error("int32: no error")
	}
}
