package fastgo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mhalab/mhalab/models/gguf"
	"github.com/mhalab/mhalab/models/quant"
)

// TestQuantScaledActivations: x times a power of two 2^k is quantised to the same q with d and
// s times 2^k, so every kernel's y is y(x)·2^k bit for bit. For large k a block's d or s
// reaches 2¹⁵ and the AVX-512 kernels multiply by x's scales times 2^e with e < 112 and by
// 2^(112−e) after (scaleForKernels); a wrong e or a forgotten post factor moves y by a power of
// two. Odd block counts (3, 49) and a row count that is not a multiple of 4 included.
func TestQuantScaledActivations(t *testing.T) {
	kernels := quantKernelSets()
	for _, f := range []gguf.TensorType{gguf.TensorQ4_1, gguf.TensorQ8_0} {
		for _, cols := range []int{64, 96, 576, 1568} {
			const rows = 7
			m := randomPacked(t, f, rows, cols, uint64(cols)+3)
			h := quant.Header{Format: f, Rows: rows, Cols: cols, Bt: 1}
			rng := rand.New(rand.NewPCG(uint64(cols), 11))
			x := make([]float32, cols)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			for _, k := range kernels {
				want := make([]float32, rows)
				quantMatMul(k, h, planar(m), x, 1, want, 1)
				for _, p := range []int{-20, 10, 20, 40, 60} {
					t.Run(fmt.Sprintf("%s/cols%d/%s/2^%d", f, cols, k.name, p), func(t *testing.T) {
						xs := make([]float32, cols)
						for i, v := range x {
							xs[i] = float32(math.Ldexp(float64(v), p))
						}
						got := make([]float32, rows)
						quantMatMul(k, h, planar(m), xs, 1, got, 1)
						for r := range rows {
							w := float32(math.Ldexp(float64(want[r]), p))
							if math.Float32bits(got[r]) != math.Float32bits(w) {
								t.Fatalf("row %d: y(x·2^%d) = %g, want y(x)·2^%d = %g", r, p, got[r], p, w)
							}
						}
					})
				}
			}
		}
	}
}

// TestQuantTailLanesIgnored: the kernels read a row's scales 16 at a time, so with 18 blocks the
// second read also covers 14 halves of whatever follows (the next scales or the quants) and
// no mask clears them; here those bytes are all 0xff (as halves a NaN pattern, which halves16
// turns into a finite number), and the kernels must multiply them by x's zero padding, not let
// them into y: y equals the plain-Go kernel's within 1e-4 relative (seen failing with the
// padding of x's scaled sums non-zero).
func TestQuantTailLanesIgnored(t *testing.T) {
	sets := simdKernelSets()
	if len(sets) == 0 {
		t.Skip("no SIMD kernels in this build or on this CPU")
	}
	for _, k := range sets {
		for _, f := range []gguf.TensorType{gguf.TensorQ4_1, gguf.TensorQ8_0} {
			testTailLanes(t, k, f)
		}
	}
}

// testTailLanes is TestQuantTailLanesIgnored for one kernel set and format.
func testTailLanes(t *testing.T, k quantKernels, f gguf.TensorType) {
	const rows, cols = 5, 576
	m := randomPacked(t, f, rows, cols, 21)
	bb, scales := f.BlockBytes(), 2
	if f == gguf.TensorQ4_1 {
		scales = 4
	}
	for b := 0; b < rows*cols/32; b++ { // every quant byte 0xff (valid: nibbles 15, int8 −1)
		for i := scales; i < bb; i++ {
			m.Data[b*bb+i] = 0xff
		}
	}
	h := quant.Header{Format: f, Rows: rows, Cols: cols, Bt: 1}
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(i%9) - 4
	}
	got, want := make([]float32, rows), make([]float32, rows)
	quantMatMul(k, h, planar(m), x, 1, got, 1)
	quantMatMul(goQuantKernels, h, planar(m), x, 1, want, 1)
	for r := range rows {
		if d := math.Abs(float64(got[r] - want[r])); !(d <= 1e-4*math.Abs(float64(want[r]))+1e-6) {
			t.Fatalf("%s row %d: %s %g, go %g", f, r, k.name, got[r], want[r])
		}
	}
}
