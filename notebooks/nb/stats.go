package nb

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Small statistics and tensor chores the notebooks need between a graph's output and a
// picture, kept here (tested) so that cells show the idea, not the loops.

// MeanVar returns the mean and the (population) variance of values.
func MeanVar(values []float64) (mean, variance float64) {
	for _, v := range values {
		mean += v
	}
	mean /= float64(len(values))
	for _, v := range values {
		variance += (v - mean) * (v - mean)
	}
	return mean, variance / float64(len(values))
}

// Std returns the (population) standard deviation of a tensor's elements.
func Std(t *tensors.Tensor) float64 {
	_, v := MeanVar(Floats(t))
	return math.Sqrt(v)
}

// MaxAbs returns max |v| over values (0 for none).
func MaxAbs(values []float64) float64 {
	m := 0.0
	for _, v := range values {
		m = max(m, math.Abs(v))
	}
	return m
}

// Histogram counts values in bins equal bins over [lo, hi) and returns the bins' centres and
// counts (values outside are not counted).
func Histogram(values []float64, lo, hi float64, bins int) (centres, counts []float64) {
	width := (hi - lo) / float64(bins)
	centres, counts = make([]float64, bins), make([]float64, bins)
	for i := range centres {
		centres[i] = lo + width*(float64(i)+0.5)
	}
	for _, v := range values {
		if bin := int(math.Floor((v - lo) / width)); v >= lo && bin >= 0 && bin < bins {
			counts[bin]++
		}
	}
	return centres, counts
}

// MeanRowMax returns the mean over rows of the largest element of each row (rows along the
// last axis): for attention weights [..., Lq, Lk], how much weight a query puts on its
// favourite key, on average (1: one-hot rows; 1/Lk: uniform rows).
func MeanRowMax(t *tensors.Tensor) float64 {
	data, n := Floats(t), t.Shape().Dim(-1)
	sum := 0.0
	for r := 0; r < len(data)/n; r++ {
		m := math.Inf(-1)
		for _, v := range data[r*n : (r+1)*n] {
			m = max(m, v)
		}
		sum += m
	}
	return sum / float64(len(data)/n)
}

// Argmax returns the index of the largest value (the first one on ties).
func Argmax(values []float64) int {
	best := 0
	for i, v := range values {
		if v > values[best] {
			best = i
		}
	}
	return best
}

// ArgmaxAt returns the most likely token at position row of logits [1, n, V] (or [n, V]).
func ArgmaxAt(logits *tensors.Tensor, row int) int32 {
	v := logits.Shape().Dim(-1)
	return int32(Argmax(Floats(logits)[row*v : (row+1)*v]))
}

// SliceAxis returns elements [from, to) of t along axis as a new Float32 tensor: SliceAxis(w,
// 0, 8, 16) of in_proj_weight [24, 8] is rows 8–15 ([8, 8]); SliceAxis(x, 1, 3, 4) of x
// [1, 6, 16] is position 3 ([1, 1, 16]).
func SliceAxis(t *tensors.Tensor, axis, from, to int) *tensors.Tensor {
	dims := t.Shape().Dimensions
	if axis < 0 || axis >= len(dims) || from < 0 || to > dims[axis] || from > to {
		panic(fmt.Errorf("nb.SliceAxis: [%d, %d) of axis %d is out of range for tensor %s", from, to, axis, t.Shape()))
	}
	data := Must1(tensors.CopyFlatData[float32](t))
	outer, inner := 1, 1
	for _, d := range dims[:axis] {
		outer *= d
	}
	for _, d := range dims[axis+1:] {
		inner *= d
	}
	out := make([]float32, 0, outer*(to-from)*inner)
	for o := range outer {
		base := o * dims[axis] * inner
		out = append(out, data[base+from*inner:base+to*inner]...)
	}
	newDims := append([]int{}, dims...)
	newDims[axis] = to - from
	return tensors.FromFlatDataAndDimensions(out, newDims...)
}

// Tokens returns tokens as an int32 tensor [1, length]: seq followed by zeros (length 0: just
// seq).
func Tokens(seq []int32, length int) *tensors.Tensor {
	p := make([]int32, max(length, len(seq)))
	copy(p, seq)
	return tensors.FromFlatDataAndDimensions(p, 1, len(p))
}

// Sub returns a − b element by element (matrices of the same size).
func Sub(a, b [][]float64) [][]float64 {
	if len(a) != len(b) {
		panic(fmt.Errorf("nb.Sub: %d rows and %d rows", len(a), len(b)))
	}
	out := make([][]float64, len(a))
	for i := range a {
		if len(a[i]) != len(b[i]) {
			panic(fmt.Errorf("nb.Sub: row %d has %d and %d columns", i, len(a[i]), len(b[i])))
		}
		out[i] = make([]float64, len(a[i]))
		for j := range a[i] {
			out[i][j] = a[i][j] - b[i][j]
		}
	}
	return out
}
