// Package tensortest converts GoMLX tensors to and from mhatest's float64 reference tensors and
// compares them: the helpers the tests of mhalib and its sub-packages share. Only tests import it.
package tensortest

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// ToTensor converts a reference tensor to a GoMLX tensor of dtype (Float32, else Float64).
func ToTensor(x *mhatest.Tensor, dtype dtypes.DType) *tensors.Tensor {
	if dtype == dtypes.Float32 {
		return tensors.FromFlatDataAndDimensions(x.Float32(), x.Shape...)
	}
	return tensors.FromFlatDataAndDimensions(append([]float64(nil), x.Data...), x.Shape...)
}

// FromTensor converts a float32 or float64 GoMLX tensor to a reference tensor; another dtype
// fails the test.
func FromTensor(t testing.TB, x *tensors.Tensor) *mhatest.Tensor {
	t.Helper()
	switch x.DType() {
	case dtypes.Float64:
		return mhatest.FromFloat64(tensors.MustCopyFlatData[float64](x), x.Shape().Dimensions...)
	case dtypes.Float32:
		return mhatest.FromFloat32(tensors.MustCopyFlatData[float32](x), x.Shape().Dimensions...)
	}
	t.Fatalf("FromTensor: unexpected dtype %s", x.Shape())
	return nil
}

// AssertClose fails unless got and want have the same shape and max |got − want| ≤ tol.
func AssertClose(t testing.TB, what string, got *tensors.Tensor, want *mhatest.Tensor, tol float64) {
	t.Helper()
	g := FromTensor(t, got)
	diff, err := mhatest.MaxAbsDiff(g, want)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !(diff <= tol) {
		t.Fatalf("%s: max |got − want| = %g > tol %g\n got  %v\n want %v", what, diff, tol, g, want)
	}
}

// MaxAbsDiff is max |a − b| over two float32 or float64 tensors of the same shape (NaN when the
// shapes or dtypes differ), for examples, which have no *testing.T.
func MaxAbsDiff(a, b *tensors.Tensor) float64 {
	if !a.Shape().Equal(b.Shape()) {
		return math.NaN()
	}
	flat := func(x *tensors.Tensor) []float64 {
		if x.DType() == dtypes.Float32 {
			return mhatest.FromFloat32(tensors.MustCopyFlatData[float32](x), x.Shape().Dimensions...).Data
		}
		return tensors.MustCopyFlatData[float64](x)
	}
	x, y := flat(a), flat(b)
	d := 0.0
	for i := range x {
		d = math.Max(d, math.Abs(x[i]-y[i]))
	}
	return d
}

// Ramp is a float32 tensor of the given dimensions holding 0, 0.1, …, 0.9, 0, 0.1, … in
// row-major order: an input whose numbers an example can print.
func Ramp(dims ...int) *tensors.Tensor {
	t := tensors.FromShape(shapes.Make(dtypes.Float32, dims...))
	tensors.MustMutableFlatData[float32](t, func(flat []float32) {
		for i := range flat {
			flat[i] = float32(i%10) / 10
		}
	})
	return t
}
