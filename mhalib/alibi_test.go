package mhalib_test

import (
	"math"
	"testing"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// ALiBi slopes for head counts that are and are not powers of two, against the reference and
// the paper's values (8 heads: 1/2 … 1/256).
func TestALiBiSlopes(t *testing.T) {
	for n := 1; n <= 40; n++ {
		got, want := mhalib.ALiBiSlopes(n), mhatest.ALiBiSlopes(n)
		if len(got) != n {
			t.Fatalf("ALiBiSlopes(%d) has %d slopes", n, len(got))
		}
		for h := range got {
			if math.Abs(got[h]-want[h]) > 1e-15 {
				t.Fatalf("ALiBiSlopes(%d)[%d] = %g, want %g", n, h, got[h], want[h])
			}
		}
	}
	for h, s := range mhalib.ALiBiSlopes(8) {
		if s != math.Pow(2, -float64(h+1)) {
			t.Fatalf("8 heads: slope %d = %g, want 2^-%d", h, s, h+1)
		}
	}
	if err := mhalib.Try(func() { mhalib.ALiBiSlopes(0) }); err == nil {
		t.Fatal("ALiBiSlopes(0) should fail")
	}
}
