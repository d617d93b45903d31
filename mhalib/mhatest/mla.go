package mhatest

import (
	"fmt"
	"math"
)

// Multi-head latent attention (MLA), DeepSeek-V2 (arXiv 2405.04434, §2.1), equations (9)–(19),
// for the hidden states x_t [E] of a sequence:
//
//	c_kv_t  = W_DKV x_t                      latent of keys and values   [dc]   (cached)
//	k_C_t,i = (W_UK c_kv_t)_i                content key of head i       [dh]
//	v_C_t,i = (W_UV c_kv_t)_i                value of head i             [dv]
//	k_R_t   = RoPE(W_KR x_t)                 decoupled key, shared       [dr]   (cached)
//	c_q_t   = W_DQ x_t                       query latent (x_t itself when W_DQ is nil, as DeepSeek-V2-Lite)
//	q_C_t,i = (W_UQ c_q_t)_i                 content query               [dh]
//	q_R_t,i = RoPE((W_QR c_q_t)_i)           decoupled query             [dr]
//	q_t,i   = [q_C_t,i ; q_R_t,i]   k_t,i = [k_C_t,i ; k_R_t]
//	o_t,i   = Σ_j softmax_j(q_t,i·k_j,i / √(dh + dr)) v_C_j,i
//	u_t     = W_O [o_t,1 ; … ; o_t,H]
//
// The absorbed form never builds k_C or v_C: q_C·k_C = (W_UK,iᵀ q_C_t,i)·c_kv_j, so W_UK folds into
// the query side, and Σ_j w_j W_UV,i c_kv_j = W_UV,i Σ_j w_j c_kv_j, so W_UV folds into the output.
// A decoder then caches only c_kv and k_R: dc + dr numbers per token and layer, where MHA caches
// 2·H·dh and GQA 2·Hkv·dh. (The released models also put an RMSNorm on c_kv and c_q; the paper's
// equations, written here, have none.)

// MLAParams holds MLA's weights, PyTorch layout [out, in].
type MLAParams struct {
	Heads, HeadDim, RopeDim, ValueDim, Latent int // H, dh, dr, dv, dc
	RoPE                                      RoPESpec

	WDQ  *Tensor // [dcq, E], or nil: c_q = x
	WUQ  *Tensor // [H·dh, dcq or E]
	WQR  *Tensor // [H·dr, dcq or E]
	WDKV *Tensor // [dc, E]
	WKR  *Tensor // [dr, E]
	WUK  *Tensor // [H·dh, dc]
	WUV  *Tensor // [H·dv, dc]
	WO   *Tensor // [E, H·dv]
}

// MLAParts are the intermediate tensors of MLA.
type MLAParts struct {
	Latent *Tensor // c_kv: [B, L, dc]
	KRope  *Tensor // k_R: [B, 1, L, dr] (after RoPE)
	QC     *Tensor // q_C: [B, H, L, dh]
	QR     *Tensor // q_R: [B, H, L, dr] (after RoPE)
}

// mlaParts computes the latent, the decoupled key and the queries of x [B, L, E].
func mlaParts(p MLAParams, x *Tensor) MLAParts {
	cq := x
	if p.WDQ != nil {
		cq = Linear(x, p.WDQ, nil)
	}
	latent := Linear(x, p.WDKV, nil)                                  // [B, L, dc]
	kRope := RoPE(SplitHeadsBL(Linear(x, p.WKR, nil), 1), p.RoPE)     // [B, 1, L, dr]
	qC := SplitHeadsBL(Linear(cq, p.WUQ, nil), p.Heads)               // [B, H, L, dh]
	qR := RoPE(SplitHeadsBL(Linear(cq, p.WQR, nil), p.Heads), p.RoPE) // [B, H, L, dr]
	return MLAParts{Latent: latent, KRope: kRope, QC: qC, QR: qR}
}

// MLA is the explicit form: x [B, L, E] → out [B, L, E], with a causal mask unless causal is
// NoCausal (queries and keys are the same L positions: TopLeft and BottomRight agree). It also
// returns the parts (what a decoder caches: Latent and KRope).
func MLA(p MLAParams, x *Tensor, causal Causal) (out *Tensor, parts MLAParts) {
	checkMLA(p, x)
	parts = mlaParts(p, x)
	H := p.Heads
	kC := SplitHeadsBL(Linear(parts.Latent, p.WUK, nil), H) // [B, H, L, dh]
	vC := SplitHeadsBL(Linear(parts.Latent, p.WUV, nil), H) // [B, H, L, dv]
	q := ConcatLast(parts.QC, parts.QR)                     // [B, H, L, dh+dr]
	k := ConcatLast(kC, RepeatKV(parts.KRope, H))           // [B, H, L, dh+dr]
	spec := AttentionSpec{Scale: 1 / math.Sqrt(float64(p.HeadDim+p.RopeDim))}
	spec.Causal = causal
	o, _ := Attention(q, k, vC, spec)                // [B, H, L, dv]
	return Linear(MergeHeadsBL(o), p.WO, nil), parts // [B, L, E]
}

// MLAAbsorbed is the absorbed form: the same result as MLA, computed from the latent without
// k_C or v_C. Per head i, with W_UK,i [dh, dc] and W_UV,i [dv, dc] the rows of head i:
//
//	q̃_t,i  = W_UK,iᵀ q_C_t,i                                          [dc]
//	s_tj,i = (q̃_t,i·c_kv_j + q_R_t,i·k_R_j) / √(dh + dr)
//	o_t,i  = W_UV,i Σ_j softmax_j(s_tj,i) c_kv_j
func MLAAbsorbed(p MLAParams, x *Tensor, causal Causal) *Tensor {
	checkMLA(p, x)
	parts := mlaParts(p, x)
	B, L, H, dc := x.Shape[0], x.Shape[1], p.Heads, p.Latent
	qt := New(B, H, L, dc) // q̃: [B, H, L, dc]
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for l := 0; l < L; l++ {
				for c := 0; c < dc; c++ {
					acc := 0.0
					for e := 0; e < p.HeadDim; e++ {
						acc += parts.QC.At(b, h, l, e) * p.WUK.At(h*p.HeadDim+e, c)
					}
					qt.Set(acc, b, h, l, c)
				}
			}
		}
	}
	latent := parts.Latent.Reshape(B, 1, L, dc) // one shared "head": [B, 1, L, dc]
	q := ConcatLast(qt, parts.QR)               // [B, H, L, dc+dr]
	k := ConcatLast(latent, parts.KRope)        // [B, 1, L, dc+dr] — MQA over the cache
	spec := AttentionSpec{Scale: 1 / math.Sqrt(float64(p.HeadDim+p.RopeDim))}
	if causal != NoCausal {
		spec.Causal = TopLeft
	}
	ctxLatent, _ := Attention(q, k, latent, spec) // Σ_j w_j c_kv_j: [B, H, L, dc]
	o := New(B, H, L, p.ValueDim)                 // W_UV,i · that: [B, H, L, dv]
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for l := 0; l < L; l++ {
				for e := 0; e < p.ValueDim; e++ {
					acc := 0.0
					for c := 0; c < dc; c++ {
						acc += p.WUV.At(h*p.ValueDim+e, c) * ctxLatent.At(b, h, l, c)
					}
					o.Set(acc, b, h, l, e)
				}
			}
		}
	}
	return Linear(MergeHeadsBL(o), p.WO, nil) // [B, L, E]
}

// checkMLA validates the weights' shapes against x [B, L, E].
func checkMLA(p MLAParams, x *Tensor) {
	if x.Rank() != 3 {
		panic(fmt.Errorf("mhatest: MLA wants x [B, L, E], got shape %v", x.Shape))
	}
	E := x.Shape[2]
	qIn := E
	if p.WDQ != nil {
		qIn = p.WDQ.Shape[0]
		want(p.WDQ, "WDQ", qIn, E)
	}
	H := p.Heads
	want(p.WUQ, "WUQ", H*p.HeadDim, qIn)
	want(p.WQR, "WQR", H*p.RopeDim, qIn)
	want(p.WDKV, "WDKV", p.Latent, E)
	want(p.WKR, "WKR", p.RopeDim, E)
	want(p.WUK, "WUK", H*p.HeadDim, p.Latent)
	want(p.WUV, "WUV", H*p.ValueDim, p.Latent)
	want(p.WO, "WO", E, H*p.ValueDim)
}

func want(w *Tensor, name string, shape ...int) {
	if w == nil || !SameShape(w.Shape, shape) {
		var got any = "nil"
		if w != nil {
			got = w.Shape
		}
		panic(fmt.Errorf("mhatest: MLA: %s shape %v, want %v", name, got, shape))
	}
}

// SplitHeadsBL turns x [B, L, H·d] into [B, H, L, d].
func SplitHeadsBL(x *Tensor, H int) *Tensor {
	B, L, Hd := x.Shape[0], x.Shape[1], x.Shape[2]
	if Hd%H != 0 {
		panic(fmt.Errorf("mhatest: SplitHeadsBL: width %d of x %v is not a multiple of %d heads", Hd, x.Shape, H))
	}
	d := Hd / H
	out := New(B, H, L, d)
	for b := 0; b < B; b++ {
		for l := 0; l < L; l++ {
			for h := 0; h < H; h++ {
				for e := 0; e < d; e++ {
					out.Set(x.At(b, l, h*d+e), b, h, l, e)
				}
			}
		}
	}
	return out
}

// MergeHeadsBL turns x [B, H, L, d] into [B, L, H·d].
func MergeHeadsBL(x *Tensor) *Tensor {
	B, H, L, d := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	out := New(B, L, H*d)
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for l := 0; l < L; l++ {
				for e := 0; e < d; e++ {
					out.Set(x.At(b, h, l, e), b, l, h*d+e)
				}
			}
		}
	}
	return out
}

// ConcatLast concatenates a [..., m] and b [..., n] (equal leading axes) into [..., m+n].
func ConcatLast(a, b *Tensor) *Tensor {
	m, n := a.Shape[a.Rank()-1], b.Shape[b.Rank()-1]
	if !SameShape(a.Shape[:a.Rank()-1], b.Shape[:b.Rank()-1]) {
		panic(fmt.Errorf("mhatest: ConcatLast: shapes %v and %v differ before the last axis", a.Shape, b.Shape))
	}
	shape := append(append([]int{}, a.Shape[:a.Rank()-1]...), m+n)
	out := New(shape...)
	for r := 0; r < sizeOf(a.Shape[:a.Rank()-1]); r++ {
		copy(out.Data[r*(m+n):], a.Data[r*m:(r+1)*m])
		copy(out.Data[r*(m+n)+m:], b.Data[r*n:(r+1)*n])
	}
	return out
}
