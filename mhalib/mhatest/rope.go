package mhatest

import (
	"fmt"
	"math"
)

// Rotary position embedding (RoPE, Su et al. 2021, "RoFormer"). The first RotaryDims features
// of every row are taken in pairs, and pair k of the row at position p is rotated by the angle
//
//	θ_k(p) = p · Theta^(−2k/RotaryDims),  k = 0 … RotaryDims/2 − 1
//
//	(x_a, x_b) → (x_a·cos θ − x_b·sin θ,  x_b·cos θ + x_a·sin θ)
//
// The two conventions differ only in which features form a pair:
//
//	half-split (GPT-NeoX, Hugging Face rotate_half): a = k, b = k + RotaryDims/2
//	interleaved (GPT-J, GGUF / llama.cpp):           a = 2k, b = 2k + 1
//
// Features from RotaryDims on pass unchanged (partial rotary, as GPT-NeoX and Phi). A rotation by
// p·ω of q and by p'·ω of k leaves q·k depending on p − p' only: that is the point of RoPE.

// RoPESpec configures RoPE; the zero values of Theta and RotaryDims mean 10 000 and all features.
type RoPESpec struct {
	Theta       float64 // base, default 10 000
	RotaryDims  int     // features rotated (even), default all
	Interleaved bool    // GPT-J pairs (2k, 2k+1) instead of half-split (k, k+RotaryDims/2)
	Offset      int     // position of row 0 (a decoding step's absolute position)
}

// RoPE rotates x [B, H, L, d]: row l sits at position Offset + l. It panics with an error value
// when RotaryDims is odd or larger than d.
func RoPE(x *Tensor, spec RoPESpec) *Tensor {
	if x.Rank() != 4 {
		panic(fmt.Errorf("mhatest: RoPE wants x [B, H, L, d], got shape %v", x.Shape))
	}
	B, H, L, d := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	theta, rd := spec.Theta, spec.RotaryDims
	if theta == 0 {
		theta = 10000
	}
	if rd == 0 {
		rd = d
	}
	if rd%2 != 0 || rd > d || rd < 0 {
		panic(fmt.Errorf("mhatest: RoPE: %d rotary dims for x %v: want an even number ≤ %d", rd, x.Shape, d))
	}
	out := x.Clone()
	half := rd / 2
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for l := 0; l < L; l++ {
				p := float64(spec.Offset + l)
				for kk := 0; kk < half; kk++ {
					angle := p * math.Pow(theta, -2*float64(kk)/float64(rd))
					c, s := math.Cos(angle), math.Sin(angle)
					ia, ib := kk, kk+half
					if spec.Interleaved {
						ia, ib = 2*kk, 2*kk+1
					}
					xa, xb := x.At(b, h, l, ia), x.At(b, h, l, ib)
					out.Set(xa*c-xb*s, b, h, l, ia)
					out.Set(xb*c+xa*s, b, h, l, ib)
				}
			}
		}
	}
	return out
}

// RoPERotateHalf is Hugging Face's formula for half-split RoPE, written as in
// modeling_llama.apply_rotary_pos_emb (read, not copied):
//
//	cos, sin = cos(p·inv_freq) and sin(p·inv_freq), each repeated twice: [L, rd]
//	rotate_half(x) = concat(−x[rd/2:], x[:rd/2])
//	x' = x·cos + rotate_half(x)·sin
//
// on the first rd features of x [B, H, L, d]. It is a second, independent statement of RoPE's
// half-split convention, for checking RoPE.
func RoPERotateHalf(x *Tensor, theta float64, rd, offset int) *Tensor {
	B, H, L := x.Shape[0], x.Shape[1], x.Shape[2]
	half := rd / 2
	out := x.Clone()
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for l := 0; l < L; l++ {
				rot := make([]float64, rd) // rotate_half(x[:rd])
				for e := 0; e < half; e++ {
					rot[e] = -x.At(b, h, l, e+half)
					rot[e+half] = x.At(b, h, l, e)
				}
				for e := 0; e < rd; e++ {
					invFreq := 1 / math.Pow(theta, float64(2*(e%half))/float64(rd))
					angle := float64(offset+l) * invFreq
					out.Set(x.At(b, h, l, e)*math.Cos(angle)+rot[e]*math.Sin(angle), b, h, l, e)
				}
			}
		}
	}
	return out
}

// RMSNorm normalises the last axis of x: x / √(mean(x²) + eps) · weight, weight: [d] (nil: ones).
// As QK-norm (Qwen 3, OLMo 2) it is applied to q and k per head, x: [B, H, L, d], before RoPE.
func RMSNorm(x, weight *Tensor, eps float64) *Tensor {
	d := x.Shape[x.Rank()-1]
	if weight != nil && !SameShape(weight.Shape, []int{d}) {
		panic(fmt.Errorf("mhatest: RMSNorm: weight shape %v, want [%d] for x %v", weight.Shape, d, x.Shape))
	}
	out := x.Clone()
	for r := 0; r < x.Size()/d; r++ {
		row := x.Data[r*d : (r+1)*d]
		ms := 0.0
		for _, e := range row {
			ms += e * e
		}
		inv := 1 / math.Sqrt(ms/float64(d)+eps)
		for c := range row {
			w := 1.0
			if weight != nil {
				w = weight.Data[c]
			}
			out.Data[r*d+c] = row[c] * inv * w
		}
	}
	return out
}
