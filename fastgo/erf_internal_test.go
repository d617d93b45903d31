//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"simd/archsimd"
	"strconv"
	"sync"
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

// TestErfLoopsEqualRef: the AVX-512 and AVX2 loops give erfPiecesRef's bits on every 4093rd
// float32 bit pattern (1.05 M values, partial vectors at the end), on each loop this CPU runs;
// NaN gives a NaN.
func TestErfLoopsEqualRef(t *testing.T) {
	xs := erfSweep(4093)
	want := make([]float32, len(xs))
	for i, x := range xs {
		want[i] = erfPiecesRef(x)
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
					t.Fatalf("erf(%g) = %g (bits %#x), erfPiecesRef %g (bits %#x)", xs[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		})
	}
}

// TestErfRefEqualsMathErf: erfPiecesRef (erf_pieces.go) gives GoMLX's
// float32(math.Erf(float64(x))) bit for bit (a NaN for a NaN) on every 1021st float32 bit
// pattern and on every 31st positive float32 below 4.5 (above, both give ±1; erf is odd): 4.2 M +
// 35 M values, cut over the cores. MHALAB_ERF_STRIDE=1 checks every positive float32 below 4.5
// (1.08·10⁹, ~20 s on 2 cores; a coefficient moved by 10⁻¹⁰ fails it).
func TestErfRefEqualsMathErf(t *testing.T) {
	stride := uint32(31)
	if s, err := strconv.Atoi(os.Getenv("MHALAB_ERF_STRIDE")); err == nil && s > 0 {
		stride = uint32(s)
	}
	var failed sync.Once
	check := func(x float32) bool {
		got, want := erfPiecesRef(x), float32(math.Erf(float64(x)))
		if want != want && got != got || math.Float32bits(got) == math.Float32bits(want) {
			return true
		}
		failed.Do(func() {
			t.Errorf("erfPiecesRef(%g) = %g (bits %#x), GoMLX's float32(math.Erf) %g (bits %#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
		})
		return false
	}
	for _, x := range erfSweep(1021) {
		check(x)
	}
	end := uint64(math.Float32bits(4.5))
	workers := uint64(runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for b := w * uint64(stride); b < end; b += workers * uint64(stride) {
				if !check(math.Float32frombits(uint32(b))) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkErfLoops times the float32 erf loops on 8 float32 lanes over the values of a
// feed-forward activation of all-MiniLM-L6-v2 (480 tokens × 1536, normal with σ 2), in
// ns per value, on each vector unit this CPU has.
func BenchmarkErfLoops(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 480*1536)
	for i := range src {
		src[i] = float32(2 * rng.NormFloat64())
	}
	dst := make([]float32, len(src))
	for _, l := range []struct {
		name string
		need bool
		fn   func(archsimd.Float32x8) archsimd.Float32x8
	}{{"pieces", vecAVX512, erf8Pieces}, {"pieces-avx2", vecAVX2, erf8PiecesAVX2}} {
		b.Run(l.name, func(b *testing.B) {
			if !l.need {
				b.Skip("not on this CPU")
			}
			for b.Loop() {
				for i := 0; i+8 <= len(src); i += 8 {
					l.fn(archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
				}
			}
			archsimd.ClearAVXUpperBits()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(src)), "ns/value")
		})
	}
}
