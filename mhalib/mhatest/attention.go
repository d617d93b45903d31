package mhatest

import (
	"fmt"
	"math"
)

// Attention as current LLMs use it: scaled dot-product attention with grouped key/value heads
// (GQA / MQA), logit soft-capping (Gemma 2), ALiBi biases, a sliding window, causal masks and
// attention sinks (gpt-oss), one query row at a time.
//
// For query head h (of Hq) the key/value head is kv = h / (Hq/Hkv) — PyTorch's enable_gqa, the
// same as repeat_interleave of k and v over heads. Query row i, key j, in this order:
//
//	s      = scale · Σ_d q[h, i, d]·k[kv, j, d]        scale 0 means 1/√dk
//	s      = cap · tanh(s / cap)                       when SoftCap > 0
//	s     += slope[h] · (j − i)                        when ALiBi is set (top-left positions)
//	s     += bias[h, i, j]                             when Bias is set
//	s      = −∞ where blocked, outside the causal mask, or outside the window
//	w[j]   = exp(s_j − m) / (exp(sink[h] − m)·[Sinks set] + Σ_j' exp(s_j' − m)),  m the row maximum
//	out[i] = Σ_j w[j]·v[kv, j, :]
//
// A row with every s_j = −∞ gets zero weights and zero output (as SDPA). Adding a constant to a
// whole row does not change softmax, so the ALiBi alignment (j − i or j − i − (Lk − Lq)) changes
// the weights only together with sinks; the top-left form j − i is the one used by the ALiBi
// paper for square attention and by `mhalab sdpa`.

// Window is a sliding (local) attention window: query i sees keys j with
//
//	p − Left ≤ j ≤ p + Right,  p = i (top-left) or p = i + Lk − Lq (BottomRight, as FlashAttention)
//
// A negative Left or Right leaves that side unbounded.
type Window struct {
	Left, Right int
	BottomRight bool
}

// Allows reports whether query i sees key j under the window, for lengths Lq and Lk.
func (w Window) Allows(i, j, Lq, Lk int) bool {
	p := i
	if w.BottomRight {
		p = i + Lk - Lq
	}
	if w.Left >= 0 && j < p-w.Left {
		return false
	}
	if w.Right >= 0 && j > p+w.Right {
		return false
	}
	return true
}

// AttentionSpec holds the options of Attention; the zero value is plain SDPA with scale 1/√dk.
type AttentionSpec struct {
	Scale   float64   // 0: 1/√dk
	SoftCap float64   // > 0: s = cap·tanh(s/cap) before the biases
	ALiBi   []float64 // one slope per query head (ALiBiSlopes), or nil
	Bias    *Tensor   // additive [B, Hq, Lq, Lk], or nil
	Blocked *Tensor   // [B, Hq, Lq, Lk], nonzero = −∞, or nil
	Causal  Causal    // NoCausal, TopLeft or BottomRight
	Window  *Window   // nil: no window
	Sinks   []float64 // one sink logit per query head, or nil
}

// Attention computes attention with the options of spec (see the description above).
//
// q: [B, Hq, Lq, dk], k: [B, Hkv, Lk, dk], v: [B, Hkv, Lk, dv], Hq a multiple of Hkv →
// out: [B, Hq, Lq, dv], weights: [B, Hq, Lq, Lk].
// It panics with an error value on inconsistent shapes.
func Attention(q, k, v *Tensor, spec AttentionSpec) (out, weights *Tensor) {
	B, Hq, Lq, dk, Hkv, Lk, dv := checkAttentionShapes(q, k, v, spec)
	scale := spec.Scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(dk))
	}
	group := Hq / Hkv
	out = New(B, Hq, Lq, dv)
	weights = New(B, Hq, Lq, Lk)
	s := make([]float64, Lk) // one row of logits: [Lk]
	for b := 0; b < B; b++ {
		for h := 0; h < Hq; h++ {
			kv := h / group
			for i := 0; i < Lq; i++ {
				for j := 0; j < Lk; j++ {
					// 1) scaled dot product
					dot := 0.0
					for d := 0; d < dk; d++ {
						dot += q.At(b, h, i, d) * k.At(b, kv, j, d)
					}
					s[j] = scale * dot
					// 2) soft-cap, 3) ALiBi, 4) additive bias
					if spec.SoftCap > 0 {
						s[j] = spec.SoftCap * math.Tanh(s[j]/spec.SoftCap)
					}
					if spec.ALiBi != nil {
						s[j] += spec.ALiBi[h] * float64(j-i)
					}
					if spec.Bias != nil {
						s[j] += spec.Bias.At(b, h, i, j)
					}
					// 5) blocked pairs
					blocked := spec.Blocked != nil && spec.Blocked.At(b, h, i, j) != 0
					switch spec.Causal {
					case TopLeft:
						blocked = blocked || j > i
					case BottomRight:
						blocked = blocked || j > i+Lk-Lq
					}
					if spec.Window != nil && !spec.Window.Allows(i, j, Lq, Lk) {
						blocked = true
					}
					if blocked {
						s[j] = math.Inf(-1)
					}
				}
				// 6) softmax, with the sink logit in the denominator only
				m := math.Inf(-1)
				for _, x := range s {
					m = math.Max(m, x)
				}
				if math.IsInf(m, -1) {
					continue // fully blocked row: weights and output stay 0
				}
				sum := 0.0
				if spec.Sinks != nil {
					m = math.Max(m, spec.Sinks[h])
					sum = math.Exp(spec.Sinks[h] - m)
				}
				for j, x := range s {
					e := math.Exp(x - m)
					weights.Set(e, b, h, i, j)
					sum += e
				}
				for j := 0; j < Lk; j++ {
					weights.Set(weights.At(b, h, i, j)/sum, b, h, i, j)
				}
				// 7) weighted sum of the values of kv head kv
				for d := 0; d < dv; d++ {
					acc := 0.0
					for j := 0; j < Lk; j++ {
						acc += weights.At(b, h, i, j) * v.At(b, kv, j, d)
					}
					out.Set(acc, b, h, i, d)
				}
			}
		}
	}
	return out, weights
}

// checkAttentionShapes validates Attention's arguments and returns the dimensions.
func checkAttentionShapes(q, k, v *Tensor, spec AttentionSpec) (B, Hq, Lq, dk, Hkv, Lk, dv int) {
	if q.Rank() != 4 || k.Rank() != 4 || v.Rank() != 4 {
		panic(fmt.Errorf("mhatest: Attention wants rank-4 q, k, v [B, H, L, d]; got q %v, k %v, v %v", q.Shape, k.Shape, v.Shape))
	}
	B, Hq, Lq, dk = q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
	Hkv, Lk, dv = k.Shape[1], k.Shape[2], v.Shape[3]
	if !SameShape(k.Shape, []int{B, Hkv, Lk, dk}) || !SameShape(v.Shape, []int{B, Hkv, Lk, dv}) {
		panic(fmt.Errorf("mhatest: Attention: q %v, k %v, v %v do not fit q [B, Hq, Lq, dk], k [B, Hkv, Lk, dk], v [B, Hkv, Lk, dv]", q.Shape, k.Shape, v.Shape))
	}
	if Hkv == 0 || Hq%Hkv != 0 {
		panic(fmt.Errorf("mhatest: Attention: q %v has %d heads, not a multiple of k %v's %d heads", q.Shape, Hq, k.Shape, Hkv))
	}
	for _, t := range []struct {
		name string
		x    *Tensor
	}{{"Bias", spec.Bias}, {"Blocked", spec.Blocked}} {
		if t.x != nil && !SameShape(t.x.Shape, []int{B, Hq, Lq, Lk}) {
			panic(fmt.Errorf("mhatest: Attention: %s shape %v, want [%d %d %d %d] (B, Hq, Lq, Lk)", t.name, t.x.Shape, B, Hq, Lq, Lk))
		}
	}
	for _, p := range []struct {
		name string
		x    []float64
	}{{"ALiBi", spec.ALiBi}, {"Sinks", spec.Sinks}} {
		if p.x != nil && len(p.x) != Hq {
			panic(fmt.Errorf("mhatest: Attention: %d %s values for %d query heads", len(p.x), p.name, Hq))
		}
	}
	return
}

// RepeatKV repeats each of the Hkv heads of x [B, Hkv, L, d] group times in a row, giving
// [B, Hkv·group, L, d] — torch.repeat_interleave(x, group, dim=1), the materialised form of GQA.
func RepeatKV(x *Tensor, group int) *Tensor {
	B, H, L, d := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	out := New(B, H*group, L, d)
	for b := 0; b < B; b++ {
		for h := 0; h < H*group; h++ {
			for l := 0; l < L; l++ {
				for e := 0; e < d; e++ {
					out.Set(x.At(b, h/group, l, e), b, h, l, e)
				}
			}
		}
	}
	return out
}

// ALiBiSlopes returns the ALiBi slopes for n heads (Press et al. 2022, "Train Short, Test
// Long"): for n a power of two, the geometric sequence 2^(−8/n), 2^(−16/n), …, 2^(−8); otherwise
// the slopes of the largest power of two m < n, followed by every other slope of 2m
// (the 1st, 3rd, 5th, …) until there are n — the rule of the paper's reference code.
func ALiBiSlopes(n int) []float64 {
	if n < 1 {
		panic(fmt.Errorf("mhatest: ALiBiSlopes: %d heads, want at least 1", n))
	}
	pow2 := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Pow(2, -8*float64(i+1)/float64(n))
		}
		return s
	}
	m := 1
	for m*2 <= n {
		m *= 2
	}
	slopes := pow2(m)
	if m == n {
		return slopes
	}
	extra := pow2(2 * m)
	for i := 0; len(slopes) < n; i += 2 {
		slopes = append(slopes, extra[i])
	}
	return slopes
}
