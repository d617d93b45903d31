//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"os"
	"strconv"
	"testing"
)

// erfSweep returns every stride-th float32 bit pattern (both signs, NaNs and infinities
// included), then the special values, in the order a loop reads them.
func erfSweep(stride uint32) []float32 {
	var xs []float32
	for b := uint64(0); b < 1<<32; b += uint64(stride) {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	return append(xs, 0, float32(math.Copysign(0, -1)), 1, -1, math.Nextafter32(1, 0), 4, float32(math.Inf(1)), float32(math.Inf(-1)))
}

// TestErfLoopsEqualRef: the AVX-512 and AVX2 loops give erfRef's bits on every 4093rd float32
// bit pattern (1.05 M values, partial vectors at the end), on each loop this CPU runs; NaN gives
// a NaN.
func TestErfLoopsEqualRef(t *testing.T) {
	xs := erfSweep(4093)
	want := make([]float32, len(xs))
	for i, x := range xs {
		want[i] = erfRef(x)
	}
	for _, level := range []string{"avx512", "avx2"} {
		if (level == "avx512" && !vecAVX512) || !vecAVX2 {
			continue
		}
		t.Run(level, func(t *testing.T) {
			prev := vecAVX512
			defer func() { vecAVX512 = prev }()
			vecAVX512 = level == "avx512"
			got := make([]float32, len(xs))
			if !erfF32Vec(got, xs) {
				t.Fatal("erfF32Vec: no loop ran")
			}
			for i := range xs {
				if want[i] != want[i] && got[i] != got[i] {
					continue // a NaN for a NaN: the loops' conversions to float64 and back quiet a signalling one
				}
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("erf(%g) = %g (bits %#x), erfRef %g (bits %#x)", xs[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		})
	}
}

// TestErfRefEqualsMathErf: erfRef gives GoMLX's float32(math.Erf(float64(x))) bit for bit (a
// NaN for a NaN) on every 1021st float32 bit pattern and on every 31st positive float32 below 4.5
// (the range where the two formulas work; erf is odd): 4.2 M + 35 M values.
// MHALAB_ERF_STRIDE=1 checks every positive float32 below 4.5 (1.08·10⁹, ~2 minutes).
func TestErfRefEqualsMathErf(t *testing.T) {
	stride := uint32(31)
	if s, err := strconv.Atoi(os.Getenv("MHALAB_ERF_STRIDE")); err == nil && s > 0 {
		stride = uint32(s)
	}
	check := func(x float32) {
		got, want := erfRef(x), float32(math.Erf(float64(x)))
		if want != want && got != got {
			return
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("erf(%g) = %g (bits %#x), GoMLX's float32(math.Erf) %g (bits %#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	for _, x := range erfSweep(1021) {
		check(x)
	}
	for b := uint32(0); b < math.Float32bits(4.5); b += stride {
		check(math.Float32frombits(b))
	}
}
