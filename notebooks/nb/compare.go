package nb

import (
	"fmt"
	"math"
)

// CompareFloats compares an exercise's numbers with the expected ones the way the lessons'
// grader reports them: "" when every |got − want| ≤ tol, else what differs — the lengths
// (expected vs received), or the first differing element and how many differ.
func CompareFloats(what string, got, want []float32, tol float64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%s: expected %d values, received %d", what, len(want), len(got))
	}
	first, n := -1, 0
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol) { // NaN differs too
			if first < 0 {
				first = i
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s: the values differ\n  first difference at index %d: expected %.6g, received %.6g\n"+
		"  %d of %d elements differ (tolerance %g)", what, first, want[first], got[first], n, len(got), tol)
}
