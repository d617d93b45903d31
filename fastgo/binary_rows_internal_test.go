package fastgo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRowsOf: the decoding step's shapes come down to rows; more than two alike groups of axes,
// or a size that is neither the output's nor 1, do not.
func TestRowsOf(t *testing.T) {
	F, B := rowFull, rowBcast
	for _, c := range []struct {
		out, a, b []int
		R, C      int
		kinds     [2][2]rowKind
		ok        bool
	}{
		{[]int{1, 1, 12, 64}, []int{1, 1, 12, 64}, []int{1, 1, 1, 64}, 12, 64, [2][2]rowKind{{F, F}, {B, F}}, true},         // RoPE's tables
		{[]int{1, 3, 3, 1, 128}, []int{1, 3, 3, 1, 128}, []int{1, 3, 3, 1, 1}, 9, 128, [2][2]rowKind{{F, F}, {F, B}}, true}, // softmax's maxima
		{[]int{2, 3, 4}, []int{2, 3, 4}, []int{2, 3, 4}, 1, 24, [2][2]rowKind{{F, F}, {F, F}}, true},
		{[]int{2, 3, 4}, []int{1, 1, 1}, []int{2, 3, 4}, 1, 24, [2][2]rowKind{{F, B}, {F, F}}, true},
		{[]int{2, 3, 4}, []int{2, 1, 4}, []int{2, 3, 4}, 0, 0, [2][2]rowKind{}, false}, // three groups
		{[]int{2, 3, 4}, []int{2, 2, 4}, []int{2, 3, 4}, 0, 0, [2][2]rowKind{}, false}, // 2 is not 3 or 1
		{[]int{5, 6}, []int{5, 1}, []int{1, 6}, 5, 6, [2][2]rowKind{{F, B}, {B, F}}, true},
		{[]int{5, 6}, []int{5, 1}, []int{5, 1}, 0, 0, [2][2]rowKind{}, false}, // both constant along the columns
		{[]int{5, 1}, []int{5, 1}, []int{1, 1}, 1, 5, [2][2]rowKind{{F, F}, {F, B}}, true},
	} {
		R, C, kinds, ok := rowsOf(c.out, [2][]int{c.a, c.b})
		if ok != c.ok || ok && (R != c.R || C != c.C || kinds != c.kinds) {
			t.Errorf("rowsOf(%v, %v, %v) = %d, %d, %v, %v; want %d, %d, %v, %v", c.out, c.a, c.b, R, C, kinds, ok, c.R, c.C, c.kinds, c.ok)
		}
	}
}

// TestBinaryRowsSameBits: on random small broadcasts (ranks 1–5, either side broadcast on any
// axes, ±0, ±Inf and NaN among the values) and large ones (up to 40⁴ values, cut over 3
// workers), binaryRows writes what the general path (binary
// over the strided plan) writes, bit for bit, for every op.
func TestBinaryRowsSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(vecSeed(t), 11)) // a fixed seed; MHALAB_FASTGO_SEED replays another
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			if rng.IntN(10) == 0 {
				x[i] = special[rng.IntN(len(special))]
			} else {
				x[i] = float32(rng.NormFloat64())
			}
		}
		return x
	}
	size := func(d []int) int {
		n := 1
		for _, v := range d {
			n *= v
		}
		return n
	}
	checked := 0
	shapes := 3000 * vecRounds() / 3 // MHALAB_FASTGO_CASES=N: N/3 times as many shapes
	for i := range shapes + shapes/30 {
		// the last ones large (cut over 3 workers by rows): ranks 2–4, axes up to 40
		large := i >= shapes
		rank := 1 + rng.IntN(5)
		if large {
			rank = 2 + rng.IntN(3)
		}
		out := make([]int, rank)
		for a := range out {
			out[a] = 1 + rng.IntN(5)
			if large {
				out[a] = 1 + rng.IntN(40)
			}
		}
		var in [2][]int
		for k := range in {
			in[k] = slices.Clone(out)
			for a := range out {
				if rng.IntN(2) == 0 {
					in[k][a] = 1
				}
			}
		}
		R, C, kinds, ok := rowsOf(out, in)
		if !ok {
			continue
		}
		a, b := fill(size(in[0])), fill(size(in[1]))
		plan := stridedPlan{dims: out, n: 2}
		for k := range in {
			plan.strides[k] = broadcastStrides(in[k], out, identityAxes(rank))
		}
		plan = plan.simplify()
		for _, o := range []op{opAdd, opSub, opMul, opDiv, opMax, opMin} {
			got := make([]float32, size(out))
			workers := 1
			if large {
				workers = 3
			}
			binaryRows(o, a, b, got, R, C, kinds, workers)
			want := make([]float32, size(out))
			binary(o, plan, a, b, want, workers)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("op %d, %v from %v, %v: element %d %v, general path %v", o, out, in[0], in[1], i, got[i], want[i])
				}
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d cases checked", checked)
	}
}
