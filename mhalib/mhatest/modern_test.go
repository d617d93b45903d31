package mhatest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The references of attention.go, rope.go and mla.go, each checked against a second,
// independent statement of the same thing.

// GQA equals plain SDPA on k and v repeated over heads (repeat_interleave).
func TestAttentionGQAEqualsRepeatedKV(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 1))
	for _, c := range []struct{ Hq, Hkv int }{{4, 2}, {6, 1}, {3, 3}} {
		q := Rand(rng, -1, 1, 2, c.Hq, 3, 4)
		k := Rand(rng, -1, 1, 2, c.Hkv, 5, 4)
		v := Rand(rng, -1, 1, 2, c.Hkv, 5, 3)
		got, gotW := Attention(q, k, v, AttentionSpec{Causal: BottomRight})
		bias, _ := CausalBias(BottomRight, 2, c.Hq, 3, 5, math.Inf(-1))
		want, wantW := SDPA(q, RepeatKV(k, c.Hq/c.Hkv), RepeatKV(v, c.Hq/c.Hkv), bias, 0)
		requireClose(t, "out", got, want, 1e-14)
		requireClose(t, "weights", gotW, wantW, 1e-14)
	}
}

// The window, spelled out by hand for Lq = Lk = 5 (left 1, right 0) and for both alignments
// with Lq < Lk.
func TestWindowAllows(t *testing.T) {
	w := Window{Left: 1, Right: 0}
	want := [][]bool{
		{true, false, false, false, false},
		{true, true, false, false, false},
		{false, true, true, false, false},
		{false, false, true, true, false},
		{false, false, false, true, true},
	}
	for i := range want {
		for j := range want[i] {
			if w.Allows(i, j, 5, 5) != want[i][j] {
				t.Fatalf("window %+v: Allows(%d, %d) = %v, want %v", w, i, j, !want[i][j], want[i][j])
			}
		}
	}
	// Lq = 2, Lk = 6: bottom-right puts query 0 at key 4; keys 3…4 (left 1, right 0), 4…5 for query 1.
	br := Window{Left: 1, Right: 0, BottomRight: true}
	for i, keys := range [][]int{{3, 4}, {4, 5}} {
		for j := 0; j < 6; j++ {
			in := j == keys[0] || j == keys[1]
			if br.Allows(i, j, 2, 6) != in {
				t.Fatalf("bottom-right window: Allows(%d, %d) = %v", i, j, !in)
			}
		}
	}
	// A negative side is unbounded: left −1, right 0 is causal.
	c := Window{Left: -1, Right: 0}
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			if c.Allows(i, j, 4, 4) != (j <= i) {
				t.Fatalf("window (−1, 0) should be causal at (%d, %d)", i, j)
			}
		}
	}
}

// Window, causal and ALiBi in Attention equal SDPA with the same blocked pairs and bias built here.
func TestAttentionWindowALiBiEqualsBias(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 2))
	B, H, Lq, Lk, d := 1, 3, 4, 7, 5
	q, k, v := Rand(rng, -1, 1, B, H, Lq, d), Rand(rng, -1, 1, B, H, Lk, d), Rand(rng, -1, 1, B, H, Lk, d)
	slopes := ALiBiSlopes(H)
	for _, w := range []Window{{2, 1, false}, {2, 1, true}, {0, -1, true}, {-1, 2, false}} {
		for _, causal := range []Causal{NoCausal, TopLeft, BottomRight} {
			bias := New(B, H, Lq, Lk)
			for h := 0; h < H; h++ {
				for i := 0; i < Lq; i++ {
					for j := 0; j < Lk; j++ {
						p := i
						if w.BottomRight {
							p += Lk - Lq
						}
						out := (w.Left >= 0 && j < p-w.Left) || (w.Right >= 0 && j > p+w.Right) ||
							(causal == TopLeft && j > i) || (causal == BottomRight && j > i+Lk-Lq)
						b := slopes[h] * float64(j-i)
						if out {
							b = math.Inf(-1)
						}
						bias.Set(b, 0, h, i, j)
					}
				}
			}
			ww := w
			got, _ := Attention(q, k, v, AttentionSpec{Window: &ww, Causal: causal, ALiBi: slopes})
			want, _ := SDPA(q, k, v, bias, 0)
			requireClose(t, "window+causal+alibi", got, want, 1e-14)
		}
	}
}

// Slopes from the ALiBi paper: 8 heads 1/2 … 1/256; 12 heads = the 8 of 8 heads, then
// 2^−0.5, 2^−1.5, 2^−2.5, 2^−3.5 (every other slope of 16 heads).
func TestALiBiSlopes(t *testing.T) {
	s8 := ALiBiSlopes(8)
	for i, s := range s8 {
		requireNear(t, "slope8", s, math.Pow(2, -float64(i+1)), 1e-15)
	}
	s12 := ALiBiSlopes(12)
	for i := 0; i < 8; i++ {
		requireNear(t, "slope12", s12[i], s8[i], 1e-15)
	}
	for i, e := range []float64{-0.5, -1.5, -2.5, -3.5} {
		requireNear(t, "slope12 extra", s12[8+i], math.Pow(2, e), 1e-15)
	}
	if got := ALiBiSlopes(1); len(got) != 1 || got[0] != 1.0/256 {
		t.Fatalf("ALiBiSlopes(1) = %v, want [1/256]", got)
	}
	if got := ALiBiSlopes(3); len(got) != 3 || got[2] != math.Pow(2, -2) {
		t.Fatalf("ALiBiSlopes(3) = %v, want [2^-4 2^-8 2^-2]", got)
	}
}

// Soft-cap by hand on one row: s = (3, 1)·scale 1 → cap·tanh(s/cap).
func TestAttentionSoftCap(t *testing.T) {
	q := FromFloat64([]float64{1, 0}, 1, 1, 1, 2)
	k := FromFloat64([]float64{3, 0, 1, 0}, 1, 1, 2, 2)
	v := FromFloat64([]float64{1, 0, 0, 1}, 1, 1, 2, 2)
	_, w := Attention(q, k, v, AttentionSpec{Scale: 1, SoftCap: 2})
	s0, s1 := 2*math.Tanh(1.5), 2*math.Tanh(0.5)
	w0 := math.Exp(s0) / (math.Exp(s0) + math.Exp(s1))
	requireNear(t, "w0", w.At(0, 0, 0, 0), w0, 1e-15)
}

// A sink equals an extra key whose logit is the sink and whose value is zero.
func TestAttentionSinkEqualsZeroValueKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 3))
	B, H, Hkv, Lq, Lk, d := 2, 4, 2, 3, 4, 3
	q, k, v := Rand(rng, -1, 1, B, H, Lq, d), Rand(rng, -1, 1, B, Hkv, Lk, d), Rand(rng, -1, 1, B, Hkv, Lk, d)
	sinks := []float64{0.5, -1, 2, 0}
	got, gotW := Attention(q, k, v, AttentionSpec{Sinks: sinks, Causal: TopLeft})
	// Extra key at index Lk: k = 0 (logit 0), bias = sink, v = 0; causal bias on the others.
	kr, vr := RepeatKV(k, H/Hkv), RepeatKV(v, H/Hkv)
	k2, v2 := New(B, H, Lk+1, d), New(B, H, Lk+1, d)
	bias := New(B, H, Lq, Lk+1)
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for j := 0; j < Lk; j++ {
				for e := 0; e < d; e++ {
					k2.Set(kr.At(b, h, j, e), b, h, j, e)
					v2.Set(vr.At(b, h, j, e), b, h, j, e)
				}
			}
			for i := 0; i < Lq; i++ {
				for j := 0; j < Lk; j++ {
					if j > i {
						bias.Set(math.Inf(-1), b, h, i, j)
					}
				}
				bias.Set(sinks[h], b, h, i, Lk)
			}
		}
	}
	want, wantW := SDPA(q, k2, v2, bias, 0)
	requireClose(t, "out", got, want, 1e-14)
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for i := 0; i < Lq; i++ {
				for j := 0; j < Lk; j++ {
					requireNear(t, "weight", gotW.At(b, h, i, j), wantW.At(b, h, i, j), 1e-14)
				}
			}
		}
	}
}

// Half-split RoPE equals Hugging Face's rotate_half formula; interleaved RoPE equals half-split
// on features permuted so that pair (2k, 2k+1) becomes (k, k + rd/2); features past RotaryDims
// pass unchanged.
func TestRoPEConventions(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 4))
	x := Rand(rng, -1, 1, 2, 3, 5, 10)
	for _, theta := range []float64{10000, 100000, 500000} {
		for _, rd := range []int{10, 6} {
			half := RoPE(x, RoPESpec{Theta: theta, RotaryDims: rd, Offset: 7})
			requireClose(t, "half vs rotate_half", half, RoPERotateHalf(x, theta, rd, 7), 1e-14)
			perm := func(t *Tensor) *Tensor { // interleaved layout → half-split layout
				out := t.Clone()
				for r := 0; r < t.Size()/10; r++ {
					for kk := 0; kk < rd/2; kk++ {
						out.Data[r*10+kk] = t.Data[r*10+2*kk]
						out.Data[r*10+kk+rd/2] = t.Data[r*10+2*kk+1]
					}
				}
				return out
			}
			inter := RoPE(x, RoPESpec{Theta: theta, RotaryDims: rd, Offset: 7, Interleaved: true})
			requireClose(t, "interleaved vs permuted half", perm(inter), RoPE(perm(x), RoPESpec{Theta: theta, RotaryDims: rd, Offset: 7}), 1e-14)
			for r := 0; r < x.Size()/10; r++ {
				for e := rd; e < 10; e++ {
					if half.Data[r*10+e] != x.Data[r*10+e] || inter.Data[r*10+e] != x.Data[r*10+e] {
						t.Fatalf("rd=%d: feature %d rotated", rd, e)
					}
				}
			}
		}
	}
}

// After RoPE, q_i·k_j depends only on i − j: shifting both positions changes nothing.
func TestRoPERelative(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 5))
	q, k := Rand(rng, -1, 1, 1, 1, 1, 8), Rand(rng, -1, 1, 1, 1, 1, 8)
	for _, inter := range []bool{false, true} {
		dot := func(i, j int) float64 {
			qi := RoPE(q, RoPESpec{Offset: i, Interleaved: inter})
			kj := RoPE(k, RoPESpec{Offset: j, Interleaved: inter})
			s := 0.0
			for e := range qi.Data {
				s += qi.Data[e] * kj.Data[e]
			}
			return s
		}
		for _, p := range [][2]int{{5, 2}, {3, 3}, {0, 4}} {
			base := dot(p[0], p[1])
			for _, shift := range []int{1, 17, 1000} {
				requireNear(t, "shifted score", dot(p[0]+shift, p[1]+shift), base, 1e-12)
			}
		}
		if math.Abs(dot(5, 2)-dot(2, 5)) < 1e-6 {
			t.Fatalf("score should depend on the sign of i − j")
		}
	}
}

// Without positions attention is permutation-equivariant: permuting the tokens permutes the
// output rows. RoPE breaks it (the scores then depend on the order).
func TestAttentionPermutationEquivariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 6))
	L := 5
	x := Rand(rng, -1, 1, 1, 2, L, 4)
	perm := []int{3, 0, 4, 1, 2}
	permute := func(t *Tensor) *Tensor {
		out := t.Clone()
		for h := 0; h < t.Shape[1]; h++ {
			for i, p := range perm {
				for e := 0; e < t.Shape[3]; e++ {
					out.Set(t.At(0, h, p, e), 0, h, i, e)
				}
			}
		}
		return out
	}
	out, _ := Attention(x, x, x, AttentionSpec{})
	outP, _ := Attention(permute(x), permute(x), permute(x), AttentionSpec{})
	requireClose(t, "permuted", outP, permute(out), 1e-14)
	rope := func(t *Tensor) *Tensor { return RoPE(t, RoPESpec{}) }
	r, _ := Attention(rope(x), rope(x), x, AttentionSpec{})
	rP, _ := Attention(rope(permute(x)), rope(permute(x)), permute(x), AttentionSpec{})
	if d, _ := MaxAbsDiff(rP, permute(r)); d < 1e-3 {
		t.Fatalf("with RoPE, permuting tokens should change the output (diff %g)", d)
	}
}

func TestRMSNorm(t *testing.T) {
	x := FromFloat64([]float64{3, 4, 0, 0}, 2, 2)
	w := FromFloat64([]float64{1, 2}, 2)
	got := RMSNorm(x, w, 1e-6)
	r := math.Sqrt(12.5 + 1e-6)
	requireClose(t, "rmsnorm", got, FromFloat64([]float64{3 / r, 8 / r, 0, 0}, 2, 2), 1e-15)
}

// RandMLAParams draws MLA weights; withDQ adds query compression.
func randMLA(rng *rand.Rand, E, H, dh, dr, dv, dc, dcq int) MLAParams {
	p := MLAParams{Heads: H, HeadDim: dh, RopeDim: dr, ValueDim: dv, Latent: dc, RoPE: RoPESpec{Theta: 10000}}
	qIn := E
	if dcq > 0 {
		p.WDQ, qIn = Rand(rng, -0.5, 0.5, dcq, E), dcq
	}
	p.WUQ, p.WQR = Rand(rng, -0.5, 0.5, H*dh, qIn), Rand(rng, -0.5, 0.5, H*dr, qIn)
	p.WDKV, p.WKR = Rand(rng, -0.5, 0.5, dc, E), Rand(rng, -0.5, 0.5, dr, E)
	p.WUK, p.WUV = Rand(rng, -0.5, 0.5, H*dh, dc), Rand(rng, -0.5, 0.5, H*dv, dc)
	p.WO = Rand(rng, -0.5, 0.5, E, H*dv)
	return p
}

// MLA's absorbed form equals its explicit form.
func TestMLAAbsorbedEqualsExplicit(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 7))
	for _, dcq := range []int{0, 6} {
		p := randMLA(rng, 8, 3, 4, 2, 5, 6, dcq)
		x := Rand(rng, -1, 1, 2, 5, 8)
		for _, causal := range []Causal{NoCausal, TopLeft} {
			explicit, parts := MLA(p, x, causal)
			requireClose(t, "absorbed", MLAAbsorbed(p, x, causal), explicit, 1e-12)
			if !SameShape(parts.Latent.Shape, []int{2, 5, 6}) || !SameShape(parts.KRope.Shape, []int{2, 1, 5, 2}) {
				t.Fatalf("cached parts: latent %v, k_R %v", parts.Latent.Shape, parts.KRope.Shape)
			}
		}
	}
}
