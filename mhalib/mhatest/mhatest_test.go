package mhatest

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// requireClose fails t if got and want differ by more than tol (or in shape).
func requireClose(t *testing.T, name string, got, want *Tensor, tol float64) {
	t.Helper()
	diff, err := MaxAbsDiff(got, want)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !(diff <= tol) {
		t.Fatalf("%s: max |got − want| = %g > %g\n got  %v\n want %v", name, diff, tol, got, want)
	}
}

func requireNear(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Fatalf("%s = %.17g, want %.17g (tol %g)", name, got, want, tol)
	}
}

func requireFinite(t *testing.T, name string, x *Tensor) {
	t.Helper()
	for i, v := range x.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s[%d] = %g, want finite", name, i, v)
		}
	}
}

func TestTensorBasics(t *testing.T) {
	x := FromFloat64([]float64{0, 1, 2, 3, 4, 5}, 2, 3)
	if got := x.At(1, 2); got != 5 {
		t.Fatalf("At(1, 2) = %g, want 5 (row-major)", got)
	}
	y := x.Clone()
	y.Set(-1, 0, 1)
	if x.At(0, 1) != 1 || y.At(0, 1) != -1 || y.Data[1] != -1 {
		t.Fatalf("Clone/Set: x %v, y %v", x, y)
	}
	if x.Size() != 6 {
		t.Fatalf("Size = %d, want 6", x.Size())
	}
	f := FromFloat32([]float32{0.5, -2}, 2)
	if f.At(0) != 0.5 || f.At(1) != -2 || f.Float32()[1] != -2 {
		t.Fatalf("FromFloat32/Float32 round trip: %v", f)
	}
	// Transpose01: [L=2, B=3, E=2] → [B=3, L=2, E=2], element (l, b, e) → (b, l, e).
	lbe := Rand(rand.New(rand.NewPCG(1, 2)), -1, 1, 2, 3, 2)
	ble := Transpose01(lbe)
	if !SameShape(ble.Shape, []int{3, 2, 2}) {
		t.Fatalf("Transpose01: shape %v, want [3 2 2]", ble.Shape)
	}
	for l := 0; l < 2; l++ {
		for b := 0; b < 3; b++ {
			for e := 0; e < 2; e++ {
				if ble.At(b, l, e) != lbe.At(l, b, e) {
					t.Fatalf("Transpose01: (%d,%d,%d) = %g, want %g", b, l, e, ble.At(b, l, e), lbe.At(l, b, e))
				}
			}
		}
	}
	requireClose(t, "Transpose01 twice", Transpose01(ble), lbe, 0)
	if _, err := MaxAbsDiff(New(2, 3), New(3, 2)); err == nil || !strings.Contains(err.Error(), "[2 3]") {
		t.Fatalf("MaxAbsDiff shape mismatch: err = %v", err)
	}
	if d, _ := MaxAbsDiff(FromFloat64([]float64{math.NaN()}, 1), New(1)); !math.IsNaN(d) {
		t.Fatalf("MaxAbsDiff with NaN = %g, want NaN", d)
	}
	if d, _ := MaxAbsDiff(FromFloat64([]float64{math.Inf(-1), 1}, 2), FromFloat64([]float64{math.Inf(-1), 1.5}, 2)); d != 0.5 {
		t.Fatalf("MaxAbsDiff with equal -Inf = %g, want 0.5", d)
	}
	r := Rand(rand.New(rand.NewPCG(3, 4)), 2, 3, 100)
	for _, v := range r.Data {
		if v < 2 || v >= 3 {
			t.Fatalf("Rand value %g outside [2, 3)", v)
		}
	}
}

func TestLinearAndInit(t *testing.T) {
	// x [2, 2], w [3, 2], b [3]: y[r, o] = Σ_i x[r, i]·w[o, i] + b[o].
	x := FromFloat64([]float64{1, 2, 3, 4}, 2, 2)
	w := FromFloat64([]float64{1, 0, 0, 1, 1, 1}, 3, 2)
	b := FromFloat64([]float64{10, 20, 30}, 3)
	requireClose(t, "Linear", Linear(x, w, b), FromFloat64([]float64{11, 22, 33, 13, 24, 37}, 2, 3), 0)
	requireClose(t, "Linear no bias, rank 3", Linear(x.Reshape(1, 2, 2), w, nil), FromFloat64([]float64{1, 2, 3, 3, 4, 7}, 1, 2, 3), 0)
	requireNear(t, "XavierBound(4, 12)", XavierBound(4, 12), math.Sqrt(6.0/16), 1e-15)
	requireNear(t, "KaimingUniformBound(16)", KaimingUniformBound(16), 0.25, 1e-15)
}

func TestLayerNorm(t *testing.T) {
	// Row [1, 2, 3]: mean 2, biased variance 2/3.
	x := FromFloat64([]float64{1, 2, 3, 5, 5, 5}, 2, 3)
	s := 1 / math.Sqrt(2.0/3+1e-5)
	requireClose(t, "LayerNorm", LayerNorm(x, nil, nil, 1e-5), FromFloat64([]float64{-s, 0, s, 0, 0, 0}, 2, 3), 1e-12)
	w := FromFloat64([]float64{2, 2, 2}, 3)
	bias := FromFloat64([]float64{1, 1, 1}, 3)
	requireClose(t, "LayerNorm affine", LayerNorm(x, w, bias, 1e-5), FromFloat64([]float64{1 - 2*s, 1, 1 + 2*s, 1, 1, 1}, 2, 3), 1e-12)
}

func TestSDPAHandComputed(t *testing.T) {
	ln3 := math.Log(3)
	negInf := math.Inf(-1)
	tests := []struct {
		name             string
		q, k, v, bias    *Tensor
		blocked          *Tensor // for SDPAMaskedFill, with fill
		fill             float64
		scale            float64
		tol              float64 // 0 means 1e-12
		wantW, wantOut   []float64
		wantWS, wantOutS []int
	}{
		{
			// logits = [ln 3, 0] → weights [3/4, 1/4]; out = ¾·[1 2] + ¼·[3 4].
			name:  "1 head, 2 keys, scale 1",
			q:     FromFloat64([]float64{ln3, 0}, 1, 1, 1, 2),
			k:     FromFloat64([]float64{1, 0, 0, 1}, 1, 1, 2, 2),
			v:     FromFloat64([]float64{1, 2, 3, 4}, 1, 1, 2, 2),
			scale: 1, wantW: []float64{0.75, 0.25}, wantOut: []float64{1.5, 2.5},
		},
		{
			// dk = 4, default scale ½: q·k0 = 2 ln 3 → logit ln 3; k1 = 0 → logit 0.
			name:  "default scale 1/sqrt(dk)",
			q:     FromFloat64([]float64{ln3 / 2, ln3 / 2, ln3 / 2, ln3 / 2}, 1, 1, 1, 4),
			k:     FromFloat64([]float64{1, 1, 1, 1, 0, 0, 0, 0}, 1, 1, 2, 4),
			v:     FromFloat64([]float64{4, 0}, 1, 1, 2, 1),
			wantW: []float64{0.75, 0.25}, wantOut: []float64{3},
		},
		{
			// q = 0 → equal logits; bias −Inf on key 0 leaves only key 1, bias ln 3
			// on key 1 in row 1 gives [1/4, 3/4].
			name:  "additive bias",
			q:     New(1, 1, 2, 2),
			k:     FromFloat64([]float64{1, 0, 0, 1}, 1, 1, 2, 2),
			v:     FromFloat64([]float64{1, 2, 3, 4}, 1, 1, 2, 2),
			bias:  FromFloat64([]float64{negInf, 0, 0, ln3}, 1, 1, 2, 2),
			scale: 1, wantW: []float64{0, 1, 0.25, 0.75}, wantOut: []float64{3, 4, 2.5, 3.5},
		},
		{
			name:  "fully masked row gives zeros",
			q:     FromFloat64([]float64{1, 1}, 1, 1, 1, 2),
			k:     FromFloat64([]float64{1, 0, 0, 1}, 1, 1, 2, 2),
			v:     FromFloat64([]float64{1, 2, 3, 4}, 1, 1, 2, 2),
			bias:  FromFloat64([]float64{negInf, negInf}, 1, 1, 1, 2),
			wantW: []float64{0, 0}, wantOut: []float64{0, 0},
		},
		{
			// Seed 000's masked_fill(mask == 0, −1e9): the logits [ln 3, 0]
			// are replaced by [−1e9, −1e9] → uniform, the mean of v.
			name:    "masked_fill -1e9 on a whole row is uniform",
			q:       FromFloat64([]float64{ln3, 0}, 1, 1, 1, 2),
			k:       FromFloat64([]float64{1, 0, 0, 1}, 1, 1, 2, 2),
			v:       FromFloat64([]float64{1, 2, 3, 4}, 1, 1, 2, 2),
			blocked: FromFloat64([]float64{1, 1}, 1, 1, 1, 2),
			fill:    -1e9, scale: 1,
			wantW: []float64{0.5, 0.5}, wantOut: []float64{2, 3},
		},
		{
			// Adding −1e9 in float64 is not masked_fill: the logit
			// difference ln 3 survives (ulp(1e9) ≈ 1.2e-7), weights [¾, ¼].
			name:  "additive -1e9 on a whole row keeps the logit differences",
			q:     FromFloat64([]float64{ln3, 0}, 1, 1, 1, 2),
			k:     FromFloat64([]float64{1, 0, 0, 1}, 1, 1, 2, 2),
			v:     FromFloat64([]float64{1, 2, 3, 4}, 1, 1, 2, 2),
			bias:  FromFloat64([]float64{-1e9, -1e9}, 1, 1, 1, 2),
			scale: 1, wantW: []float64{0.75, 0.25}, wantOut: []float64{1.5, 2.5},
			tol: 1e-7, // −1e9 + ln 3 is rounded to a multiple of ulp(1e9)
		},
		{
			// masked_fill with −Inf equals adding −Inf: zeros.
			name:    "masked_fill -Inf on a whole row gives zeros",
			q:       FromFloat64([]float64{ln3, 0}, 1, 1, 1, 2),
			k:       FromFloat64([]float64{1, 0, 0, 1}, 1, 1, 2, 2),
			v:       FromFloat64([]float64{1, 2, 3, 4}, 1, 1, 2, 2),
			blocked: FromFloat64([]float64{1, 1}, 1, 1, 1, 2),
			fill:    negInf, scale: 1,
			wantW: []float64{0, 0}, wantOut: []float64{0, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tol := tc.tol
			if tol == 0 {
				tol = 1e-12
			}
			out, w := SDPAMaskedFill(tc.q, tc.k, tc.v, tc.bias, tc.blocked, tc.fill, tc.scale)
			requireClose(t, "weights", w, FromFloat64(tc.wantW, w.Shape...), tol)
			requireClose(t, "out", out, FromFloat64(tc.wantOut, out.Shape...), tol)
			if tc.blocked != nil {
				return
			}
			// The flash recurrence must agree, for every block size.
			for blockK := 1; blockK <= 3; blockK++ {
				fo, _ := OnlineSoftmaxAttention(tc.q, tc.k, tc.v, tc.bias, tc.scale, blockK)
				requireClose(t, "OnlineSoftmaxAttention out", fo, out, tol)
			}
		})
	}
}

// rowSums returns the sums of the last axis of w [..., Lk].
func rowSums(w *Tensor) []float64 {
	Lk := w.Shape[w.Rank()-1]
	sums := make([]float64, w.Size()/Lk)
	for r := range sums {
		for j := 0; j < Lk; j++ {
			sums[r] += w.Data[r*Lk+j]
		}
	}
	return sums
}

func TestSDPAWeightsRowsSumToOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	B, h, Lq, Lk, d := 2, 3, 4, 5, 6
	q, k, v := Rand(rng, -2, 2, B, h, Lq, d), Rand(rng, -2, 2, B, h, Lk, d), Rand(rng, -2, 2, B, h, Lk, d)
	// Key 4 of batch 1 is padding; the causal mask blocks more.
	kpm := NewBoolMask(BlockedWhereTrue, []bool{false, false, false, false, false, false, false, false, false, true}, B, Lk)
	for _, spec := range []MaskSpec{{}, {Causal: TopLeft}, {Causal: BottomRight, KeyPaddingMask: kpm}, {KeyPaddingMask: kpm, Fill: -1e9}} {
		bias, err := spec.Bias(B, h, Lq, Lk)
		if err != nil {
			t.Fatal(err)
		}
		_, w := SDPA(q, k, v, bias, 0)
		for r, s := range rowSums(w) {
			if math.Abs(s-1) > 1e-12 {
				t.Fatalf("spec %+v: row %d sums to %.15g, want 1", spec, r, s)
			}
		}
	}
}

func TestCausalMatrices(t *testing.T) {
	tests := []struct {
		name string
		got  [][]bool
		want string // rows of 0/1
	}{
		{"TopLeft 2x3", CausalTopLeft(2, 3), "100 110"},
		{"BottomRight 2x3", CausalBottomRight(2, 3), "110 111"},
		{"TopLeft 3x2", CausalTopLeft(3, 2), "10 11 11"},
		{"BottomRight 3x2", CausalBottomRight(3, 2), "00 10 11"},
		{"square equal", CausalBottomRight(2, 2), "10 11"},
	}
	for _, tc := range tests {
		var rows []string
		for _, row := range tc.got {
			s := ""
			for _, a := range row {
				if a {
					s += "1"
				} else {
					s += "0"
				}
			}
			rows = append(rows, s)
		}
		if got := strings.Join(rows, " "); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCausalPerturbFuture changes one key/value and checks that exactly the
// queries allowed to see it move.
func TestCausalPerturbFuture(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		causal  Causal
		allowed func(Lq, Lk int) [][]bool
	}{{TopLeft, CausalTopLeft}, {BottomRight, CausalBottomRight}} {
		for _, dims := range [][2]int{{4, 4}, {3, 5}, {5, 3}} {
			Lq, Lk := dims[0], dims[1]
			t.Run(c.causal.String(), func(t *testing.T) {
				// Through SDPA with a causal bias.
				q, k, v := Rand(rng, -1, 1, 1, 2, Lq, 3), Rand(rng, -1, 1, 1, 2, Lk, 3), Rand(rng, -1, 1, 1, 2, Lk, 3)
				bias, _ := CausalBias(c.causal, 1, 2, Lq, Lk, DefaultFill())
				out, _ := SDPA(q, k, v, bias, 0)
				allowed := c.allowed(Lq, Lk)
				for jStar := 0; jStar < Lk; jStar++ {
					k2, v2 := k.Clone(), v.Clone()
					for d := 0; d < 3; d++ {
						k2.Set(k2.At(0, 1, jStar, d)+5, 0, 1, jStar, d)
						v2.Set(v2.At(0, 1, jStar, d)-7, 0, 1, jStar, d)
					}
					out2, _ := SDPA(q, k2, v2, bias, 0)
					for i := 0; i < Lq; i++ {
						moved := false
						for d := 0; d < 3; d++ {
							moved = moved || out.At(0, 1, i, d) != out2.At(0, 1, i, d)
						}
						if moved != allowed[i][jStar] {
							t.Fatalf("Lq=%d Lk=%d: changing key %d moved query %d: %v, want %v", Lq, Lk, jStar, i, moved, allowed[i][jStar])
						}
					}
				}
				// Through MHA: perturb the last key/value token of the input.
				p := testParams(4, 2, 4, 4, rng)
				query, key, value := Rand(rng, -1, 1, 1, Lq, 4), Rand(rng, -1, 1, 1, Lk, 4), Rand(rng, -1, 1, 1, Lk, 4)
				o := MHAOptions{Causal: c.causal}
				mout, _, err := MHA(p, query, key, value, o)
				if err != nil {
					t.Fatal(err)
				}
				key2, value2 := key.Clone(), value.Clone()
				for e := 0; e < 4; e++ {
					key2.Set(3, 0, Lk-1, e)
					value2.Set(-3, 0, Lk-1, e)
				}
				mout2, _, _ := MHA(p, query, key2, value2, o)
				for i := 0; i < Lq; i++ {
					moved := false
					for e := 0; e < 4; e++ {
						moved = moved || mout.At(0, i, e) != mout2.At(0, i, e)
					}
					if moved != allowed[i][Lk-1] {
						t.Fatalf("MHA Lq=%d Lk=%d: last key moved query %d: %v, want %v", Lq, Lk, i, moved, allowed[i][Lk-1])
					}
				}
			})
		}
	}
}

func TestMaskConventions(t *testing.T) {
	B, h, Lq, Lk := 2, 3, 2, 3
	fill := -100.0
	rng := rand.New(rand.NewPCG(5, 6))
	n := B * h * Lq * Lk
	blocked := make([]bool, n)
	attend := make([]bool, n)
	for i := range blocked {
		blocked[i] = rng.IntN(2) == 0
		attend[i] = !blocked[i]
	}
	a, err := AttnMaskBias(NewBoolMask(BlockedWhereTrue, blocked, B*h, Lq, Lk), B, h, Lq, Lk, fill)
	if err != nil {
		t.Fatal(err)
	}
	b, err := AttnMaskBias(NewBoolMask(AttendWhereTrue, attend, B*h, Lq, Lk), B, h, Lq, Lk, fill)
	if err != nil {
		t.Fatal(err)
	}
	requireClose(t, "BlockedWhereTrue(m) vs AttendWhereTrue(!m)", a, b, 0)
	// The 3-D form [B·h, Lq, Lk] and the 4-D form [B, h, Lq, Lk] share the
	// same row-major data: row b·h + head is (b, head).
	c, err := AttnMaskBias(NewBoolMask(BlockedWhereTrue, blocked, B, h, Lq, Lk), B, h, Lq, Lk, fill)
	if err != nil {
		t.Fatal(err)
	}
	requireClose(t, "3-D vs 4-D", a, c, 0)
	for bb := 0; bb < B; bb++ {
		for head := 0; head < h; head++ {
			pos := ((bb*h+head)*Lq+1)*Lk + 2
			want := 0.0
			if blocked[pos] {
				want = fill
			}
			if got := a.At(bb, head, 1, 2); got != want {
				t.Fatalf("3-D mask at (b=%d, head=%d, 1, 2) = %g, want %g (index b*h+head)", bb, head, got, want)
			}
		}
	}
	// 2-D: broadcast over batch and heads; [B, 1, Lq, Lk]: over heads.
	two, _ := AttnMaskBias(BoolMaskRows(AttendWhereTrue, CausalTopLeft(Lq, Lk)), B, h, Lq, Lk, fill)
	causal, _ := CausalBias(TopLeft, B, h, Lq, Lk, fill)
	requireClose(t, "2-D causal mask vs CausalBias", two, causal, 0)
	perBatch := []bool{true, false, false, false, false, false, false, false, false, false, false, true}
	pb, _ := AttnMaskBias(NewBoolMask(BlockedWhereTrue, perBatch, B, 1, Lq, Lk), B, h, Lq, Lk, fill)
	if pb.At(0, 2, 0, 0) != fill || pb.At(1, 1, 1, 2) != fill || pb.At(1, 0, 0, 0) != 0 {
		t.Fatalf("[B,1,Lq,Lk] mask not broadcast over heads: %v", pb)
	}
	// Additive masks pass their values through.
	add := Rand(rng, -3, 0, Lq, Lk)
	ab, _ := AttnMaskBias(NewAdditiveMask(add), B, h, Lq, Lk, fill)
	if ab.At(1, 2, 1, 0) != add.At(1, 0) {
		t.Fatalf("additive mask: %g, want %g", ab.At(1, 2, 1, 0), add.At(1, 0))
	}
	// Key padding [B, Lk]: same for all heads and queries.
	kp, _ := KeyPaddingBias(NewBoolMask(BlockedWhereTrue, []bool{false, true, false, true, false, false}, B, Lk), B, h, Lq, Lk, fill)
	for head := 0; head < h; head++ {
		for i := 0; i < Lq; i++ {
			if kp.At(0, head, i, 1) != fill || kp.At(1, head, i, 0) != fill || kp.At(0, head, i, 0) != 0 || kp.At(1, head, i, 2) != 0 {
				t.Fatalf("key padding bias wrong at head %d row %d: %v", head, i, kp)
			}
		}
	}
	// MaskSpec sums the parts; Fill 0 means −Inf.
	spec := MaskSpec{KeyPaddingMask: NewBoolMask(BlockedWhereTrue, []bool{false, true, false, true, false, false}, B, Lk), Causal: TopLeft}
	sb, err := spec.Bias(B, h, Lq, Lk)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(sb.At(0, 0, 0, 1), -1) || !math.IsInf(sb.At(0, 0, 1, 2), -1) || sb.At(0, 0, 1, 0) != 0 {
		t.Fatalf("MaskSpec.Bias: %v", sb)
	}
	if none, err := (MaskSpec{}).Bias(B, h, Lq, Lk); none != nil || err != nil {
		t.Fatalf("empty MaskSpec.Bias = %v, %v; want nil, nil", none, err)
	}
	// Parts: bool/causal masks go to blocked (0/1), float masks to additive.
	add2 := Rand(rng, -1, 0, B, Lk)
	partsSpec := MaskSpec{AttnMask: BoolMaskRows(BlockedWhereTrue, [][]bool{{false, false, true}, {false, false, false}}), KeyPaddingMask: NewAdditiveMask(add2), Fill: -1e9}
	additive, blockedT, err := partsSpec.Parts(B, h, Lq, Lk)
	if err != nil {
		t.Fatal(err)
	}
	if blockedT.At(1, 2, 0, 2) != 1 || blockedT.At(1, 2, 1, 2) != 0 || additive.At(1, 2, 0, 1) != add2.At(1, 1) {
		t.Fatalf("Parts: additive %v blocked %v", additive, blockedT)
	}
	full, _ := partsSpec.Bias(B, h, Lq, Lk)
	requireNear(t, "Bias = additive + fill·blocked", full.At(0, 1, 0, 2), add2.At(0, 2)-1e9, 0)
	if a, bl, _ := (MaskSpec{Causal: TopLeft}).Parts(B, h, Lq, Lk); a != nil || bl == nil || bl.At(0, 0, 0, 1) != 1 {
		t.Fatalf("causal Parts: additive %v blocked %v", a, bl)
	}
	padded := PadKeyColumns(sb, 2)
	if !SameShape(padded.Shape, []int{B, h, Lq, Lk + 2}) || padded.At(1, 2, 1, Lk+1) != 0 || !math.IsInf(padded.At(0, 0, 0, 1), -1) {
		t.Fatalf("PadKeyColumns: %v", padded)
	}
}

// testParams builds deterministic random MHA parameters with biases.
func testParams(E, h, kdim, vdim int, rng *rand.Rand) MHAParams {
	a := XavierBound(E, 3*E)
	return MHAParams{
		E: E, NumHeads: h,
		Wq: Rand(rng, -a, a, E, E), Wk: Rand(rng, -a, a, E, kdim), Wv: Rand(rng, -a, a, E, vdim),
		Bq: Rand(rng, -0.1, 0.1, E), Bk: Rand(rng, -0.1, 0.1, E), Bv: Rand(rng, -0.1, 0.1, E),
		Wo: Rand(rng, -0.5, 0.5, E, E), Bo: Rand(rng, -0.1, 0.1, E),
	}
}

// pyParams rebuilds the parameters and inputs of testdata/mha_reference.py, an
// independent plain-Python implementation that follows
// F.multi_head_attention_forward's sequence-first layout and mask padding
// step by step. E=4, h=2, B=2, Lq=2, Lk=3.
func pyParams() (p MHAParams, query, key, value *Tensor) {
	const E, B, Lq, Lk = 4, 2, 2, 3
	w := func(a, c int) *Tensor {
		t := New(E, E)
		for o := 0; o < E; o++ {
			for i := 0; i < E; i++ {
				t.Set(float64((o*a+i*c)%11-5)/10, o, i)
			}
		}
		return t
	}
	vec := func(a int) *Tensor {
		t := New(E)
		for o := 0; o < E; o++ {
			t.Data[o] = float64((o*a)%5-2) / 10
		}
		return t
	}
	x := func(L, a int) *Tensor {
		t := New(B, L, E)
		for b := 0; b < B; b++ {
			for l := 0; l < L; l++ {
				for e := 0; e < E; e++ {
					t.Set(float64((l*5+e*a+b*3)%7-3)/4, b, l, e)
				}
			}
		}
		return t
	}
	p = MHAParams{E: E, NumHeads: 2, Wq: w(7, 3), Wk: w(5, 2), Wv: w(3, 4), Wo: w(2, 5),
		Bq: vec(1), Bk: vec(2), Bv: vec(3), Bo: vec(4)}
	return p, x(Lq, 2), x(Lk, 3), x(Lk, 1)
}

func TestMHAReferenceNumbers(t *testing.T) {
	p, query, key, value := pyParams()
	out, w, err := MHA(p, query, key, value, MHAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireNear(t, "plain out[0,1,2]", out.At(0, 1, 2), 0.27088075709662446, 1e-13)
	requireNear(t, "plain out[1,0,0]", out.At(1, 0, 0), -0.15088462638654757, 1e-13)
	requireNear(t, "plain out[1,1,3]", out.At(1, 1, 3), 0.18659733519510346, 1e-13)
	requireNear(t, "plain weights[1,1,0,2]", w.At(1, 1, 0, 2), 0.32414171807152675, 1e-13)

	// add_bias_kv + add_zero_attn + 3-D bool attn_mask + bool key_padding_mask.
	p.BiasK = FromFloat64([]float64{0.3, -0.2, 0.1, 0.5}, 1, 1, 4)
	p.BiasV = FromFloat64([]float64{-0.4, 0.25, 0.6, -0.1}, 4)
	p.AddZeroAttn = true
	var amBool []bool // 3-D bool mask [B·h, Lq, Lk]: (n + i + j) % 4 == 0, n = b·h + head
	for n := 0; n < 4; n++ {
		for i := 0; i < 2; i++ {
			for j := 0; j < 3; j++ {
				amBool = append(amBool, (n+i+j)%4 == 0)
			}
		}
	}
	o := MHAOptions{
		AttnMask:       NewBoolMask(BlockedWhereTrue, amBool, 4, 2, 3),
		KeyPaddingMask: NewBoolMask(BlockedWhereTrue, []bool{false, false, true, true, false, false}, 2, 3),
	}
	out, w, err = MHA(p, query, key, value, o)
	if err != nil {
		t.Fatal(err)
	}
	requireNear(t, "masked out[0,0,1]", out.At(0, 0, 1), 0.27700229795579695, 1e-13)
	requireNear(t, "masked out[1,1,2]", out.At(1, 1, 2), 0.24382139427971664, 1e-13)
	wantRow := map[[3]int][]float64{
		{1, 0, 1}: {0, 0, 0.329415223469734, 0.3364778209329468, 0.33410695559731907},
		{0, 1, 0}: {0.2558071304564584, 0.2410980195567312, 0, 0.2519921017552074, 0.2511027482316029},
	}
	for idx, want := range wantRow {
		for j, wj := range want {
			requireNear(t, "masked weights", w.At(idx[0], idx[1], idx[2], j), wj, 1e-13)
		}
	}
}

func TestMHABiasKVAndZeroAttnShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	B, Lq, Lk, E := 2, 3, 4, 6
	query, key, value := Rand(rng, -1, 1, B, Lq, E), Rand(rng, -1, 1, B, Lk, 5), Rand(rng, -1, 1, B, Lk, 7)
	kpm := NewBoolMask(BlockedWhereTrue, []bool{false, false, true, true, true, true, true, true}, B, Lk)
	tests := []struct {
		name      string
		biasKV    bool
		zeroAttn  bool
		wantLk    int
		kpm       Mask
		fullyMask bool // batch 1 has every original key padded
	}{
		{"plain", false, false, Lk, Mask{}, false},
		{"add_bias_kv", true, false, Lk + 1, kpm, false},
		{"add_zero_attn", false, true, Lk + 1, kpm, false},
		{"both", true, true, Lk + 2, kpm, false},
		{"fully padded batch, no extra keys", false, false, Lk, kpm, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testParams(E, 3, 5, 7, rng)
			if tc.biasKV {
				p.BiasK, p.BiasV = Rand(rng, -1, 1, E), Rand(rng, -1, 1, E)
			}
			p.AddZeroAttn = tc.zeroAttn
			out, w, err := MHA(p, query, key, value, MHAOptions{KeyPaddingMask: tc.kpm})
			if err != nil {
				t.Fatal(err)
			}
			if !SameShape(out.Shape, []int{B, Lq, E}) || !SameShape(w.Shape, []int{B, 3, Lq, tc.wantLk}) {
				t.Fatalf("shapes out %v weights %v, want [%d %d %d] and [%d 3 %d %d]", out.Shape, w.Shape, B, Lq, E, B, Lq, tc.wantLk)
			}
			requireFinite(t, "out", out)
			for r, s := range rowSums(w) {
				batch := r / (3 * Lq)
				want := 1.0
				if tc.fullyMask && batch == 1 {
					want = 0 // every key of batch 1 is padding → zero row
				}
				if math.Abs(s-want) > 1e-12 {
					t.Fatalf("row %d sums to %g, want %g", r, s, want)
				}
			}
			if tc.fullyMask {
				// Zero head outputs → the output projection yields Bo.
				for i := 0; i < Lq; i++ {
					for e := 0; e < E; e++ {
						requireNear(t, "fully padded out", out.At(1, i, e), p.Bo.At(e), 1e-15)
					}
				}
			}
			// The extra columns are never masked: positive weight.
			for j := Lk; j < tc.wantLk; j++ {
				if w.At(1, 2, Lq-1, j) <= 0 {
					t.Fatalf("extra key column %d has weight %g, want > 0", j, w.At(1, 2, Lq-1, j))
				}
			}
		})
	}
}

func TestMHAFillMinus1e9(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	p := testParams(4, 2, 4, 4, rng)
	x := Rand(rng, -1, 1, 1, 3, 4)
	// Row 0 fully blocked (seed 000 style mask == 0 → −1e9).
	allowed := []bool{false, false, false, true, true, false, true, true, true}
	_, w, err := MHA(p, x, x, x, MHAOptions{AttnMask: NewBoolMask(AttendWhereTrue, allowed, 3, 3), Fill: -1e9})
	if err != nil {
		t.Fatal(err)
	}
	for head := 0; head < 2; head++ {
		for j := 0; j < 3; j++ {
			requireNear(t, "uniform weight of fully masked row", w.At(0, head, 0, j), 1.0/3, 1e-12)
		}
		if w.At(0, head, 1, 2) > 1e-300 {
			t.Fatalf("blocked weight = %g, want ~0", w.At(0, head, 1, 2))
		}
	}
	_, w, _ = MHA(p, x, x, x, MHAOptions{AttnMask: NewBoolMask(AttendWhereTrue, allowed, 3, 3)})
	for j := 0; j < 3; j++ {
		if w.At(0, 1, 0, j) != 0 {
			t.Fatalf("−Inf fill: fully masked row weight %g, want 0", w.At(0, 1, 0, j))
		}
	}
}

func TestUnevenHeads(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	E, B, Lq, Lk := 6, 2, 3, 4
	p := testParams(E, 3, E, E, rng)
	q, k, v := Rand(rng, -1, 1, B, Lq, E), Rand(rng, -1, 1, B, Lk, E), Rand(rng, -1, 1, B, Lk, E)
	o := MHAOptions{Causal: BottomRight}
	even, evenW, err := MHA(p, q, k, v, o)
	if err != nil {
		t.Fatal(err)
	}
	p.HeadSizes = []int{2, 2, 2}
	uneven, unevenW, err := MHA(p, q, k, v, o)
	if err != nil {
		t.Fatal(err)
	}
	requireClose(t, "HeadSizes [2 2 2] vs even", uneven, even, 0)
	requireClose(t, "weights", unevenW, evenW, 0)

	// Sizes [5, 1]: head 1 is column 5 alone with scale 1/√1.
	p.NumHeads, p.HeadSizes = 2, []int{5, 1}
	_, w, err := MHA(p, q, k, v, MHAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	qp, kp, vp := Linear(q, p.Wq, p.Bq), Linear(k, p.Wk, p.Bk), Linear(v, p.Wv, p.Bv)
	_, w1 := SDPA(headSlice(qp, 5, 1), headSlice(kp, 5, 1), headSlice(vp, 5, 1), nil, 1)
	_, w0 := SDPA(headSlice(qp, 0, 5), headSlice(kp, 0, 5), headSlice(vp, 0, 5), nil, 1/math.Sqrt(5))
	for b := 0; b < B; b++ {
		for i := 0; i < Lq; i++ {
			for j := 0; j < Lk; j++ {
				requireNear(t, "head 1 weight", w.At(b, 1, i, j), w1.At(b, 0, i, j), 1e-14)
				requireNear(t, "head 0 weight", w.At(b, 0, i, j), w0.At(b, 0, i, j), 1e-14)
			}
		}
	}
}

// TestMHAMatchesBatchedSDPA checks MHA's per-head loop against one batched
// SDPA call on [B, h, L, d] tensors cut from the projections (head n owns
// columns n·d … n·d+d−1), for even heads.
func TestMHAMatchesBatchedSDPA(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	E, h, B, Lq, Lk := 8, 4, 2, 3, 5
	p := testParams(E, h, 3, 2, rng)
	query, key, value := Rand(rng, -1, 1, B, Lq, E), Rand(rng, -1, 1, B, Lk, 3), Rand(rng, -1, 1, B, Lk, 2)
	d := E / h
	split := func(x *Tensor) *Tensor { // [B, L, E] → [B, h, L, d]
		L := x.Shape[1]
		out := New(B, h, L, d)
		for b := 0; b < B; b++ {
			for n := 0; n < h; n++ {
				for l := 0; l < L; l++ {
					for c := 0; c < d; c++ {
						out.Set(x.At(b, l, n*d+c), b, n, l, c)
					}
				}
			}
		}
		return out
	}
	kpm := NewAdditiveMask(Rand(rng, -2, 0, B, Lk))
	spec := MaskSpec{KeyPaddingMask: kpm, Causal: TopLeft}
	bias, err := spec.Bias(B, h, Lq, Lk)
	if err != nil {
		t.Fatal(err)
	}
	heads, wantW := SDPA(split(Linear(query, p.Wq, p.Bq)), split(Linear(key, p.Wk, p.Bk)), split(Linear(value, p.Wv, p.Bv)), bias, 0)
	merged := New(B, Lq, E)
	for b := 0; b < B; b++ {
		for n := 0; n < h; n++ {
			for i := 0; i < Lq; i++ {
				for c := 0; c < d; c++ {
					merged.Set(heads.At(b, n, i, c), b, i, n*d+c)
				}
			}
		}
	}
	want := Linear(merged, p.Wo, p.Bo)
	got, gotW, err := MHA(p, query, key, value, MHAOptions{KeyPaddingMask: kpm, Causal: TopLeft})
	if err != nil {
		t.Fatal(err)
	}
	requireClose(t, "MHA vs batched SDPA", got, want, 1e-14)
	requireClose(t, "weights", gotW, wantW, 1e-14)
	avg := AverageHeads(gotW)
	s := 0.0
	for n := 0; n < h; n++ {
		s += gotW.At(1, n, 2, 1)
	}
	requireNear(t, "AverageHeads", avg.At(1, 2, 1), s/float64(h), 1e-15)
}

func TestFromInProj(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	E := 4
	inW, inB := Rand(rng, -1, 1, 3*E, E), Rand(rng, -1, 1, 3*E)
	outW, outB := Rand(rng, -1, 1, E, E), Rand(rng, -1, 1, E)
	p, err := FromInProj(2, inW, inB, outW, outB)
	if err != nil {
		t.Fatal(err)
	}
	if p.Wk.At(2, 3) != inW.At(E+2, 3) || p.Wv.At(0, 1) != inW.At(2*E, 1) || p.Bv.At(3) != inB.At(2*E+3) || p.Bq.At(1) != inB.At(1) {
		t.Fatalf("FromInProj split rows wrongly")
	}
	// Fused projection = three separate ones.
	x := Rand(rng, -1, 1, 1, 2, E)
	fused := Linear(x, inW, inB) // [1, 2, 3E]
	k := Linear(x, p.Wk, p.Bk)   // [1, 2, E]
	for l := 0; l < 2; l++ {
		for e := 0; e < E; e++ {
			requireNear(t, "fused k", fused.At(0, l, E+e), k.At(0, l, e), 1e-15)
		}
	}
	if _, err := FromInProj(2, Rand(rng, -1, 1, 3*E, E+1), nil, outW, nil); err == nil {
		t.Fatal("FromInProj accepted in_proj_weight [12 5]")
	}
	if p, err := FromInProj(2, inW, nil, outW, nil); err != nil || p.Bq != nil {
		t.Fatalf("FromInProj without bias: %v, Bq %v", err, p.Bq)
	}
}

func TestPreLNBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	E := 4
	p := testParams(E, 2, E, E, rng)
	x := Rand(rng, -1, 1, 2, 3, E)
	lnW, lnB := Rand(rng, 0.5, 1.5, E), Rand(rng, -0.1, 0.1, E)
	y, err := PreLNBlock(x, lnW, lnB, p, MHAOptions{Causal: TopLeft})
	if err != nil {
		t.Fatal(err)
	}
	n := LayerNorm(x, lnW, lnB, 1e-5)
	attn, _, _ := MHA(p, n, n, n, MHAOptions{Causal: TopLeft})
	want := x.Clone()
	for i := range want.Data {
		want.Data[i] += attn.Data[i]
	}
	requireClose(t, "PreLNBlock", y, want, 0)
	// With a zero output projection, the block is the identity.
	p.Wo, p.Bo = New(E, E), nil
	y, _ = PreLNBlock(x, lnW, lnB, p, MHAOptions{})
	requireClose(t, "zero Wo", y, x, 0)
	if _, err := PreLNBlock(x, New(3), nil, p, MHAOptions{}); err == nil || !strings.Contains(err.Error(), "lnWeight") {
		t.Fatalf("PreLNBlock lnWeight [3]: err = %v", err)
	}
}

func TestOnlineSoftmaxAttentionMatchesSDPA(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	B, h, Lq, Lk, dk, dv := 2, 2, 4, 7, 3, 5
	q, k, v := Rand(rng, -3, 3, B, h, Lq, dk), Rand(rng, -3, 3, B, h, Lk, dk), Rand(rng, -1, 1, B, h, Lk, dv)
	// Batch 1: keys 0..5 padded, so with the causal mask query rows 0..2 of
	// batch 1 see nothing (fully masked) and row 3 sees key 6 only after the
	// first blocks were all masked.
	kpm := NewBoolMask(BlockedWhereTrue, []bool{false, false, false, false, false, false, false, true, true, true, true, true, true, false}, B, Lk)
	for _, spec := range []MaskSpec{{}, {Causal: BottomRight}, {Causal: BottomRight, KeyPaddingMask: kpm}, {KeyPaddingMask: kpm, Fill: -1e9}} {
		bias, err := spec.Bias(B, h, Lq, Lk)
		if err != nil {
			t.Fatal(err)
		}
		want, w := SDPA(q, k, v, bias, 0)
		for _, blockK := range []int{1, 2, 3, 4, 7, 10} {
			got, lse := OnlineSoftmaxAttention(q, k, v, bias, 0, blockK)
			requireClose(t, "out", got, want, 1e-13)
			requireFinite(t, "out", got)
			// lse = log Σ_j exp(logit_j); check through weights: w_j = exp(logit_j − lse).
			for b := 0; b < B; b++ {
				for n := 0; n < h; n++ {
					for i := 0; i < Lq; i++ {
						l := lse.At(b, n, i)
						if math.IsInf(l, -1) {
							for j := 0; j < Lk; j++ {
								if w.At(b, n, i, j) != 0 {
									t.Fatalf("lse −Inf but weight %g", w.At(b, n, i, j))
								}
							}
							continue
						}
						for j := 0; j < Lk; j++ {
							dot := 0.0
							for d := 0; d < dk; d++ {
								dot += q.At(b, n, i, d) * k.At(b, n, j, d)
							}
							logit := dot / math.Sqrt(float64(dk))
							if bias != nil {
								logit += bias.At(b, n, i, j)
							}
							requireNear(t, "exp(logit − lse)", math.Exp(logit-l), w.At(b, n, i, j), 1e-13)
						}
					}
				}
			}
		}
	}
}

func TestNumGradAndLoss(t *testing.T) {
	// f(x) = Σ x_i² + sin(x_0)·x_1 → ∂f/∂x_0 = 2x_0 + cos(x_0)·x_1,
	// ∂f/∂x_1 = 2x_1 + sin(x_0), ∂f/∂x_i = 2x_i otherwise.
	x := FromFloat64([]float64{0.3, -1.2, 2.5, 0}, 2, 2)
	f := func() float64 {
		s := 0.0
		for _, v := range x.Data {
			s += v * v
		}
		return s + math.Sin(x.Data[0])*x.Data[1]
	}
	before := x.Clone()
	g := NumGrad(f, x, 1e-6)
	want := FromFloat64([]float64{0.6 + math.Cos(0.3)*-1.2, -2.4 + math.Sin(0.3), 5, 0}, 2, 2)
	requireClose(t, "NumGrad", g, want, 1e-8)
	requireClose(t, "x restored", x, before, 0)

	// Loss(out, c) = Σ out·c: its gradient w.r.t. out is c.
	rng := rand.New(rand.NewPCG(91, 92))
	out, c := Rand(rng, -1, 1, 3, 2), Rand(rng, -1, 1, 3, 2)
	requireNear(t, "Loss", Loss(FromFloat64([]float64{1, 2}, 2), FromFloat64([]float64{3, -1}, 2)), 1, 0)
	requireClose(t, "grad of Loss", NumGrad(func() float64 { return Loss(out, c) }, out, 1e-6), c, 1e-9)

	// d/dv of Loss(SDPA(...)) is weightsᵀ·c: a known gradient through SDPA.
	q, k, v := Rand(rng, -1, 1, 1, 1, 2, 3), Rand(rng, -1, 1, 1, 1, 4, 3), Rand(rng, -1, 1, 1, 1, 4, 2)
	cot := Rand(rng, -1, 1, 1, 1, 2, 2)
	_, w := SDPA(q, k, v, nil, 0)
	gv := NumGrad(func() float64 { o, _ := SDPA(q, k, v, nil, 0); return Loss(o, cot) }, v, 1e-6)
	wantGV := New(1, 1, 4, 2)
	for j := 0; j < 4; j++ {
		for d := 0; d < 2; d++ {
			for i := 0; i < 2; i++ {
				wantGV.Set(wantGV.At(0, 0, j, d)+w.At(0, 0, i, j)*cot.At(0, 0, i, d), 0, 0, j, d)
			}
		}
	}
	requireClose(t, "dLoss/dv = weightsᵀ·c", gv, wantGV, 1e-9)
}

func TestMHAErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(101, 102))
	good := testParams(4, 2, 3, 5, rng)
	q, k, v := Rand(rng, -1, 1, 2, 3, 4), Rand(rng, -1, 1, 2, 6, 3), Rand(rng, -1, 1, 2, 6, 5)
	with := func(edit func(p *MHAParams)) MHAParams { p := good; edit(&p); return p }
	tests := []struct {
		name    string
		p       MHAParams
		q, k, v *Tensor
		o       MHAOptions
		want    string // substring of the error
	}{
		{"query width", good, Rand(rng, -1, 1, 2, 3, 5), k, v, MHAOptions{}, "query shape [2 3 5]"},
		{"query rank", good, Rand(rng, -1, 1, 3, 4), k, v, MHAOptions{}, "query shape [3 4]"},
		{"key batch", good, q, Rand(rng, -1, 1, 1, 6, 3), v, MHAOptions{}, "key shape [1 6 3]"},
		{"key kdim", good, q, Rand(rng, -1, 1, 2, 6, 4), v, MHAOptions{}, "key shape [2 6 4]"},
		{"value length", good, q, k, Rand(rng, -1, 1, 2, 5, 5), MHAOptions{}, "value shape [2 5 5]"},
		{"E not divisible", with(func(p *MHAParams) { p.NumHeads = 3 }), q, k, v, MHAOptions{}, "not divisible"},
		{"HeadSizes sum", with(func(p *MHAParams) { p.HeadSizes = []int{1, 2} }), q, k, v, MHAOptions{}, "sum to 3"},
		{"HeadSizes count", with(func(p *MHAParams) { p.HeadSizes = []int{4} }), q, k, v, MHAOptions{}, "1 entries"},
		{"Wq shape", with(func(p *MHAParams) { p.Wq = New(4, 3) }), q, k, v, MHAOptions{}, "Wq shape [4 3]"},
		{"Bo shape", with(func(p *MHAParams) { p.Bo = New(3) }), q, k, v, MHAOptions{}, "Bo shape [3]"},
		{"BiasK alone", with(func(p *MHAParams) { p.BiasK = New(4) }), q, k, v, MHAOptions{}, "BiasK and BiasV"},
		{"BiasV shape", with(func(p *MHAParams) { p.BiasK, p.BiasV = New(4), New(2) }), q, k, v, MHAOptions{}, "BiasV shape [2]"},
		{"attn_mask shape", good, q, k, v, MHAOptions{AttnMask: NewAdditiveMask(New(3, 5))}, "attn_mask shape [3 5]"},
		{"attn_mask 3-D", good, q, k, v, MHAOptions{AttnMask: NewBoolMask(BlockedWhereTrue, make([]bool, 2*3*6), 2, 3, 6)}, "attn_mask shape [2 3 6]"},
		{"key_padding_mask shape", good, q, k, v, MHAOptions{KeyPaddingMask: NewBoolMask(BlockedWhereTrue, make([]bool, 6), 1, 6)}, "key_padding_mask shape [1 6]"},
		{"bad causal", good, q, k, v, MHAOptions{Causal: Causal(9)}, "causal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, w, err := MHA(tc.p, tc.q, tc.k, tc.v, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "mhatest: ") {
				t.Fatalf("err = %v, want an error containing %q", err, tc.want)
			}
			if out != nil || w != nil {
				t.Fatalf("outputs not nil on error")
			}
		})
	}
	// The good parameters do work.
	if _, _, err := MHA(good, q, k, v, MHAOptions{}); err != nil {
		t.Fatal(err)
	}
}
