package mhatest

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Tensor is a dense float64 array stored in row-major order: the last index
// moves fastest. A Tensor of Shape [2, 3] keeps element (i, j) at Data[i*3+j].
//
// The zero-rank Tensor (Shape [] and one element) is a scalar.
type Tensor struct {
	Shape []int
	Data  []float64
}

// New returns a zero-filled Tensor of the given shape.
func New(shape ...int) *Tensor {
	return &Tensor{Shape: append([]int{}, shape...), Data: make([]float64, sizeOf(shape))}
}

// FromFloat64 wraps a copy of data in a Tensor of the given shape.
// It panics if len(data) differs from the product of shape.
func FromFloat64(data []float64, shape ...int) *Tensor {
	if len(data) != sizeOf(shape) {
		panic(fmt.Errorf("mhatest: FromFloat64: %d values do not fill shape %v (%d elements)", len(data), shape, sizeOf(shape)))
	}
	t := New(shape...)
	copy(t.Data, data)
	return t
}

// FromFloat32 converts data to float64 and wraps it in a Tensor of the given
// shape. It panics if len(data) differs from the product of shape.
func FromFloat32(data []float32, shape ...int) *Tensor {
	if len(data) != sizeOf(shape) {
		panic(fmt.Errorf("mhatest: FromFloat32: %d values do not fill shape %v (%d elements)", len(data), shape, sizeOf(shape)))
	}
	t := New(shape...)
	for i, v := range data {
		t.Data[i] = float64(v)
	}
	return t
}

// Rand returns a Tensor whose elements are drawn uniformly from [lo, hi).
func Rand(rng *rand.Rand, lo, hi float64, shape ...int) *Tensor {
	t := New(shape...)
	for i := range t.Data {
		t.Data[i] = lo + (hi-lo)*rng.Float64()
	}
	return t
}

// Size is the number of elements, the product of Shape.
func (t *Tensor) Size() int { return len(t.Data) }

// Rank is the number of axes, len(Shape).
func (t *Tensor) Rank() int { return len(t.Shape) }

// offset turns a multi-index into a position in Data (row-major).
func (t *Tensor) offset(idx []int) int {
	if len(idx) != len(t.Shape) {
		panic(fmt.Errorf("mhatest: index %v has %d entries, tensor shape %v has rank %d", idx, len(idx), t.Shape, len(t.Shape)))
	}
	pos := 0
	for axis, i := range idx {
		if i < 0 || i >= t.Shape[axis] {
			panic(fmt.Errorf("mhatest: index %v out of range for shape %v", idx, t.Shape))
		}
		pos = pos*t.Shape[axis] + i
	}
	return pos
}

// At returns the element at idx, one index per axis.
func (t *Tensor) At(idx ...int) float64 { return t.Data[t.offset(idx)] }

// Set stores v at idx, one index per axis.
func (t *Tensor) Set(v float64, idx ...int) { t.Data[t.offset(idx)] = v }

// Float32 returns the elements converted to float32 (a new slice).
func (t *Tensor) Float32() []float32 {
	out := make([]float32, len(t.Data))
	for i, v := range t.Data {
		out[i] = float32(v)
	}
	return out
}

// Clone returns a deep copy.
func (t *Tensor) Clone() *Tensor {
	return FromFloat64(t.Data, t.Shape...)
}

// Reshape returns a copy of t with a new shape of the same size.
// It panics if the sizes differ.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	if sizeOf(shape) != t.Size() {
		panic(fmt.Errorf("mhatest: cannot reshape %v (%d elements) to %v", t.Shape, t.Size(), shape))
	}
	return FromFloat64(t.Data, shape...)
}

// String prints the shape and the values, for test failures.
func (t *Tensor) String() string {
	return fmt.Sprintf("Tensor%v%v", t.Shape, t.Data)
}

// MaxAbsDiff returns max_i |a_i − b_i|. Shapes must be equal, otherwise it
// returns an error naming both shapes. A NaN in either tensor makes the
// result NaN, and an Inf where the other has a different value makes it +Inf,
// so a comparison "diff <= tol" fails in both cases. Equal infinities count
// as a difference of 0.
func MaxAbsDiff(a, b *Tensor) (float64, error) {
	if !SameShape(a.Shape, b.Shape) {
		return 0, fmt.Errorf("mhatest: MaxAbsDiff: shape %v differs from shape %v", a.Shape, b.Shape)
	}
	worst := 0.0
	for i := range a.Data {
		x, y := a.Data[i], b.Data[i]
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.NaN(), nil
		}
		if x == y { // also covers equal infinities
			continue
		}
		worst = math.Max(worst, math.Abs(x-y))
	}
	return worst, nil
}

// Transpose01 swaps the first two axes: x [A, B, ...rest] → [B, A, ...rest].
// It converts PyTorch's sequence-first [L, B, E] to batch-first [B, L, E]
// and back. It panics if x has rank < 2.
func Transpose01(x *Tensor) *Tensor {
	if x.Rank() < 2 {
		panic(fmt.Errorf("mhatest: Transpose01 needs rank >= 2, got shape %v", x.Shape))
	}
	A, B := x.Shape[0], x.Shape[1]
	rest := sizeOf(x.Shape[2:]) // elements per (a, b) pair
	shape := append([]int{B, A}, x.Shape[2:]...)
	out := New(shape...)
	for a := 0; a < A; a++ {
		for b := 0; b < B; b++ {
			for r := 0; r < rest; r++ {
				out.Data[(b*A+a)*rest+r] = x.Data[(a*B+b)*rest+r]
			}
		}
	}
	return out
}

// SameShape reports whether two shapes are equal.
func SameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sizeOf is the product of the dimensions (1 for a scalar).
func sizeOf(shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Errorf("mhatest: negative dimension in shape %v", shape))
		}
		n *= d
	}
	return n
}
