package fastgo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxF32VecRows: maxF32Vec equals Go's max bit for bit (any NaN gives NaN, +0 above −0) on
// rows of every length up to 200 and of 512 and 4096 (the vector loops of 64 and 16 and the
// scalar tail), with NaN, ±0 and ±Inf placed at random, and for the inits −Inf, +0, −0, NaN and
// a finite value.
func TestMaxF32VecRows(t *testing.T) {
	if _, ok := maxF32Vec(0, nil); !ok {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(11, 3))
	negZero := float32(math.Copysign(0, -1))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	specials := []float32{nan, 0, negZero, inf, -inf}
	inits := []float32{-inf, 0, negZero, nan, -2.5}
	lengths := []int{512, 4096}
	for n := range 201 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for trial := range 12 {
			row := make([]float32, n)
			for i := range row {
				row[i] = float32(rng.NormFloat64()) - 3
				if trial%4 == 1 {
					row[i] = -float32(rng.Float64()) // non-positive: the maximum may be a zero
				}
			}
			if n > 0 && trial > 0 {
				for range 1 + trial%3 {
					row[rng.IntN(n)] = specials[rng.IntN(len(specials))]
				}
			}
			for _, init := range inits {
				got, _ := maxF32Vec(init, row)
				want := maxF32Go(init, row)
				if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
					t.Fatalf("n %d trial %d init %v: maxF32Vec = %v (%#x), Go's max %v (%#x)", n, trial, init, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
	}
}

// TestSumF32VecOrder: sumF32Vec adds in the order its comment gives — four vector accumulators,
// the 16 lanes pairwise by halves, then the tail in order — bit for bit against a plain-Go
// replay of that order, on rows of every length up to 300.
func TestSumF32VecOrder(t *testing.T) {
	if _, ok := sumF32Vec(nil); !ok {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(12, 4))
	for n := range 301 {
		row := make([]float32, n)
		for i := range row {
			row[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(6)-3)))
		}
		want := sumF32DocumentedOrder(row)
		if got, _ := sumF32Vec(row); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("n %d: sumF32Vec = %v, the documented order gives %v", n, got, want)
		}
	}
}

// sumF32DocumentedOrder adds row in the order sumF32Vec and sumF32AVX2 document, in plain Go:
// four accumulators of 16 lanes over blocks of 64, then one over blocks of 16, the four summed
// pairwise, the 16 lanes folded by halves, then the tail in order.
func sumF32DocumentedOrder(row []float32) float32 {
	var acc [4][16]float32
	n, i := len(row), 0
	for ; i+64 <= n; i += 64 {
		for v := range 4 {
			for l := range 16 {
				acc[v][l] += row[i+16*v+l]
			}
		}
	}
	for ; i+16 <= n; i += 16 {
		for l := range 16 {
			acc[0][l] += row[i+l]
		}
	}
	var lanes [16]float32
	for l := range 16 {
		lanes[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l])
	}
	for w := 8; w >= 1; w /= 2 {
		for j := range w {
			lanes[j] += lanes[j+w]
		}
	}
	sum := lanes[0]
	for _, v := range row[i:] {
		sum += v
	}
	return sum
}
