//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"testing"
)

// TestExpTaylorIsTheConstants: the coefficients exp reads from memory are, in every lane, the
// float32 constants 1/2!, …, 1/7! it held in registers before, bit for bit (1/i! computed in
// float64 and rounded to float32 could round twice): exp's values did not move.
func TestExpTaylorIsTheConstants(t *testing.T) {
	want := [8]float32{2: 1.0 / 2, 3: 1.0 / 6, 4: 1.0 / 24, 5: 1.0 / 120, 6: 1.0 / 720, 7: 1.0 / 5040}
	for i := 2; i < len(want); i++ {
		for lane, got := range expTaylor[i] {
			if math.Float32bits(got) != math.Float32bits(want[i]) {
				t.Fatalf("expTaylor[%d][%d] = %g (bits %#x), want %g (bits %#x)", i, lane, got, math.Float32bits(got), want[i], math.Float32bits(want[i]))
			}
		}
	}
}
