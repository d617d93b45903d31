package mhatest

import (
	"fmt"
	"math"
)

// Diff compares got with want element by element within tol (|got − want| ≤ tol + tol·|want|)
// and says how they differ, in the words the lessons' grader and the notebooks' exercises show a
// student: "got nothing (nil), expected shape [2 3]", "expected shape [2 3], got [3 2]", or
// "the values differ" with the first differing index, both values and how many elements differ.
// It returns "" when they match. NaN matches nothing; equal infinities match.
func Diff(got, want *Tensor, tol float64) string {
	if got == nil {
		return fmt.Sprintf("got nothing (nil), expected shape %v", want.Shape)
	}
	if !SameShape(got.Shape, want.Shape) {
		return fmt.Sprintf("expected shape %v, got %v", want.Shape, got.Shape)
	}
	first, count := -1, 0
	for i := range want.Data {
		if !near(got.Data[i], want.Data[i], tol) {
			if first < 0 {
				first = i
			}
			count++
		}
	}
	if first < 0 {
		return ""
	}
	g, w := got.Data[first], want.Data[first]
	detail := fmt.Sprintf("|difference| %.3g > tolerance %.0e", math.Abs(g-w), tol)
	if math.IsNaN(g) || math.IsInf(g, 0) || math.IsInf(w, 0) {
		detail = "not a finite match"
	}
	return fmt.Sprintf("the values differ\n  first difference at index %v: expected %.6g, got %.6g (%s)\n  %d of %d elements differ",
		Index(want.Shape, first), w, g, detail, count, len(want.Data))
}

func near(got, want, tol float64) bool {
	if got == want { // also equal infinities
		return true
	}
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(got, 0) || math.IsInf(want, 0) {
		return false
	}
	return math.Abs(got-want) <= tol+tol*math.Abs(want)
}

// Index turns a flat row-major position into a multi-index of shape.
func Index(shape []int, flat int) []int {
	idx := make([]int, len(shape))
	for axis := len(shape) - 1; axis >= 0; axis-- {
		if shape[axis] > 0 {
			idx[axis] = flat % shape[axis]
			flat /= shape[axis]
		}
	}
	return idx
}
