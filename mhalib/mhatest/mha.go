package mhatest

import (
	"fmt"
	"math"
)

// MHAParams holds the weights of one multi-head attention layer, in PyTorch
// nn.MultiheadAttention layout (weights [out, in], y = x·Wᵀ + b).
type MHAParams struct {
	E        int // embed_dim: width of the query and of the output
	NumHeads int // h
	// HeadSizes optionally splits E unevenly: head n uses the columns
	// [Σ_{m<n} HeadSizes[m], Σ_{m≤n} HeadSizes[m]) of the projections and
	// its own scale 1/√HeadSizes[n]. len = NumHeads, sum = E.
	// nil means NumHeads heads of E/NumHeads each.
	HeadSizes []int

	Wq *Tensor // [E, E]     (q_proj_weight, or in_proj_weight[0:E])
	Wk *Tensor // [E, kdim]  (k_proj_weight, or in_proj_weight[E:2E])
	Wv *Tensor // [E, vdim]  (v_proj_weight, or in_proj_weight[2E:3E])
	Bq *Tensor // [E] or nil (in_proj_bias[0:E]); nil = no bias
	Bk *Tensor // [E] or nil (in_proj_bias[E:2E])
	Bv *Tensor // [E] or nil (in_proj_bias[2E:3E])
	Wo *Tensor // [E, E]     (out_proj.weight)
	Bo *Tensor // [E] or nil (out_proj.bias)

	// BiasK, BiasV: [E] (or PyTorch's [1, 1, E]); both nil unless add_bias_kv.
	// They are appended as one extra key/value row after the projection.
	BiasK, BiasV *Tensor
	// AddZeroAttn appends a zero key and a zero value row per head
	// (PyTorch add_zero_attn), after BiasK/BiasV.
	AddZeroAttn bool
}

// FromInProj builds MHAParams from PyTorch's fused in-projection
// (kdim == vdim == E): inProjWeight [3E, E] holds Wq, Wk, Wv stacked by rows,
// inProjBias [3E] (or nil) holds Bq, Bk, Bv. outProjWeight [E, E],
// outProjBias [E] or nil. E is read from inProjWeight.
func FromInProj(numHeads int, inProjWeight, inProjBias, outProjWeight, outProjBias *Tensor) (MHAParams, error) {
	if inProjWeight.Rank() != 2 || inProjWeight.Shape[0] != 3*inProjWeight.Shape[1] {
		return MHAParams{}, fmt.Errorf("mhatest: in_proj_weight shape %v, want [3E, E]", inProjWeight.Shape)
	}
	E := inProjWeight.Shape[1]
	if inProjBias != nil && !SameShape(inProjBias.Shape, []int{3 * E}) {
		return MHAParams{}, fmt.Errorf("mhatest: in_proj_bias shape %v, want [%d] (3E)", inProjBias.Shape, 3*E)
	}
	p := MHAParams{E: E, NumHeads: numHeads, Wo: outProjWeight, Bo: outProjBias}
	// Rows [n·E, (n+1)·E) of in_proj_weight are the n-th projection.
	chunkW := func(n int) *Tensor { return FromFloat64(inProjWeight.Data[n*E*E:(n+1)*E*E], E, E) }
	p.Wq, p.Wk, p.Wv = chunkW(0), chunkW(1), chunkW(2)
	if inProjBias != nil {
		chunkB := func(n int) *Tensor { return FromFloat64(inProjBias.Data[n*E:(n+1)*E], E) }
		p.Bq, p.Bk, p.Bv = chunkB(0), chunkB(1), chunkB(2)
	}
	return p, p.check()
}

// Heads returns the size of every head: HeadSizes, or NumHeads × E/NumHeads.
func (p MHAParams) Heads() []int {
	if p.HeadSizes != nil {
		return p.HeadSizes
	}
	sizes := make([]int, p.NumHeads)
	for n := range sizes {
		sizes[n] = p.E / p.NumHeads
	}
	return sizes
}

// check validates the parameter shapes (not the inputs).
func (p MHAParams) check() error {
	E := p.E
	if E <= 0 || p.NumHeads <= 0 {
		return fmt.Errorf("mhatest: E=%d and NumHeads=%d must be positive", E, p.NumHeads)
	}
	if p.HeadSizes == nil {
		if E%p.NumHeads != 0 {
			return fmt.Errorf("mhatest: E=%d is not divisible by NumHeads=%d; give HeadSizes for an uneven split", E, p.NumHeads)
		}
	} else {
		if len(p.HeadSizes) != p.NumHeads {
			return fmt.Errorf("mhatest: HeadSizes %v has %d entries, NumHeads=%d", p.HeadSizes, len(p.HeadSizes), p.NumHeads)
		}
		sum := 0
		for _, d := range p.HeadSizes {
			if d <= 0 {
				return fmt.Errorf("mhatest: HeadSizes %v has a size <= 0", p.HeadSizes)
			}
			sum += d
		}
		if sum != E {
			return fmt.Errorf("mhatest: HeadSizes %v sum to %d, want E=%d", p.HeadSizes, sum, E)
		}
	}
	for _, w := range []struct {
		name string
		t    *Tensor
	}{{"Wq", p.Wq}, {"Wk", p.Wk}, {"Wv", p.Wv}, {"Wo", p.Wo}} {
		if w.t == nil || w.t.Rank() != 2 || w.t.Shape[0] != E {
			shape := []int(nil)
			if w.t != nil {
				shape = w.t.Shape
			}
			return fmt.Errorf("mhatest: %s shape %v, want [%d, in]", w.name, shape, E)
		}
	}
	if p.Wq.Shape[1] != E || p.Wo.Shape[1] != E {
		return fmt.Errorf("mhatest: Wq shape %v and Wo shape %v must both be [%d %d]", p.Wq.Shape, p.Wo.Shape, E, E)
	}
	for _, b := range []struct {
		name string
		t    *Tensor
	}{{"Bq", p.Bq}, {"Bk", p.Bk}, {"Bv", p.Bv}, {"Bo", p.Bo}} {
		if b.t != nil && !SameShape(b.t.Shape, []int{E}) {
			return fmt.Errorf("mhatest: %s shape %v, want [%d]", b.name, b.t.Shape, E)
		}
	}
	if (p.BiasK == nil) != (p.BiasV == nil) {
		return fmt.Errorf("mhatest: BiasK and BiasV must be both set (add_bias_kv) or both nil")
	}
	for _, b := range []struct {
		name string
		t    *Tensor
	}{{"BiasK", p.BiasK}, {"BiasV", p.BiasV}} {
		if b.t != nil && !SameShape(b.t.Shape, []int{E}) && !SameShape(b.t.Shape, []int{1, 1, E}) {
			return fmt.Errorf("mhatest: %s shape %v, want [%d] or [1 1 %d]", b.name, b.t.Shape, E, E)
		}
	}
	return nil
}

// MHAOptions are the per-call options of MHA (PyTorch forward arguments).
type MHAOptions struct {
	// AttnMask: PyTorch attn_mask, [Lq, Lk] or [B·h, Lq, Lk] (also accepted:
	// [B, h, Lq, Lk], [B, 1, Lq, Lk]). nn.MultiheadAttention's bool masks are
	// BlockedWhereTrue; float masks are Additive. Lk counts the original
	// keys only: MHA adds the columns for BiasK/AddZeroAttn itself.
	AttnMask Mask
	// KeyPaddingMask: PyTorch key_padding_mask [B, Lk], bool true = padding
	// (BlockedWhereTrue) or float (Additive).
	KeyPaddingMask Mask
	// Causal adds a causal mask over the original Lq × Lk keys (the extra
	// bias_kv / zero-attention keys stay visible, like an attn_mask that
	// PyTorch pads with allowed columns).
	Causal Causal
	// Fill is the logit of blocked positions for bool and causal masks;
	// 0 means −Inf (PyTorch). Seed 000 uses −1e9.
	Fill float64
	// Scale multiplies q·k; 0 means 1/√d_h for each head h (with
	// HeadSizes, every head gets its own).
	Scale float64
}

// MHA is multi-head attention with exactly the semantics of PyTorch's
// nn.MultiheadAttention(batch_first=True, dropout=0) forward, returning the
// per-head weights (average_attn_weights=False; see AverageHeads).
//
// query: [B, Lq, E], key: [B, Lk, kdim], value: [B, Lk, vdim] →
// out: [B, Lq, E], weights: [B, h, Lq, Lk'] with
// Lk' = Lk (+1 if BiasK) (+1 if AddZeroAttn).
//
// Steps (as F.multi_head_attention_forward):
//
//  1. project: q = query·Wqᵀ + Bq [B, Lq, E], k [B, Lk, E], v [B, Lk, E];
//  2. masks → [B, h, Lq, Lk] float bias and blocked positions
//     (MaskSpec.Parts);
//  3. add_bias_kv: append BiasK to k and BiasV to v → [B, Lk+1, E],
//     and an allowed column to the masks;
//  4. add_zero_attn: append a zero row to k and v → [B, Lk'+1, E] (a zero
//     row of E is a zero row in every head), and another allowed column;
//  5. per head n: slice q, k, v to [B, 1, L, d_n], SDPAMaskedFill with
//     scale 1/√d_n, write its output into columns of the merged [B, Lq, E];
//  6. out = merged·Woᵀ + Bo [B, Lq, E].
//
// Bool and causal masks replace blocked logits by the fill (−Inf by
// default, which is the same as PyTorch's adding −Inf; −1e9 reproduces seed
// 000's masked_fill). Float masks are added, as in PyTorch.
//
// Fully masked rows (fill −Inf) give 0 weights and 0 head outputs (see SDPA); the output
// projection then yields Bo for them. PyTorch's MHA gives NaN there.
//
// Inconsistent shapes return an error naming the argument and shapes.
func MHA(p MHAParams, query, key, value *Tensor, o MHAOptions) (out, weights *Tensor, err error) {
	if err := p.check(); err != nil {
		return nil, nil, err
	}
	E, h := p.E, p.NumHeads
	if query.Rank() != 3 || query.Shape[2] != E {
		return nil, nil, fmt.Errorf("mhatest: query shape %v, want [B, Lq, %d]", query.Shape, E)
	}
	B, Lq := query.Shape[0], query.Shape[1]
	if key.Rank() != 3 || key.Shape[0] != B || key.Shape[2] != p.Wk.Shape[1] {
		return nil, nil, fmt.Errorf("mhatest: key shape %v, want [%d, Lk, %d] (B from query %v, kdim from Wk %v)", key.Shape, B, p.Wk.Shape[1], query.Shape, p.Wk.Shape)
	}
	Lk := key.Shape[1]
	if !SameShape(value.Shape, []int{B, Lk, p.Wv.Shape[1]}) {
		return nil, nil, fmt.Errorf("mhatest: value shape %v, want [%d %d %d] (B, Lk from key %v, vdim from Wv %v)", value.Shape, B, Lk, p.Wv.Shape[1], key.Shape, p.Wv.Shape)
	}

	// 1) Projections: [B, L, in] → [B, L, E].
	q := Linear(query, p.Wq, p.Bq) // [B, Lq, E]
	k := Linear(key, p.Wk, p.Bk)   // [B, Lk, E]
	v := Linear(value, p.Wv, p.Bv) // [B, Lk, E]

	// 2) Masks over the original keys: float masks add to the logits, bool
	//    and causal masks replace blocked logits by the fill (masked_fill).
	spec := MaskSpec{AttnMask: o.AttnMask, KeyPaddingMask: o.KeyPaddingMask, Causal: o.Causal, Fill: o.Fill}
	bias, blocked, err := spec.Parts(B, h, Lq, Lk) // each [B, h, Lq, Lk] or nil
	if err != nil {
		return nil, nil, err
	}

	// 3) add_bias_kv: one learned key/value row, always visible.
	if p.BiasK != nil {
		k = appendKeyRow(k, p.BiasK.Data) // [B, Lk+1, E]
		v = appendKeyRow(v, p.BiasV.Data) // [B, Lk+1, E]
		bias, blocked = PadKeyColumns(bias, 1), PadKeyColumns(blocked, 1)
	}
	// 4) add_zero_attn: one zero key/value row, always visible.
	if p.AddZeroAttn {
		k = appendKeyRow(k, make([]float64, E)) // [B, Lk'+1, E]
		v = appendKeyRow(v, make([]float64, E))
		bias, blocked = PadKeyColumns(bias, 1), PadKeyColumns(blocked, 1)
	}
	LkAll := k.Shape[1] // Lk'

	// 5) Heads, one at a time.
	merged := New(B, Lq, E) // heads concatenated: [B, Lq, E]
	weights = New(B, h, Lq, LkAll)
	offset := 0 // first column of head n in E
	for n, d := range p.Heads() {
		qh := headSlice(q, offset, d)  // [B, 1, Lq, d]
		kh := headSlice(k, offset, d)  // [B, 1, Lk', d]
		vh := headSlice(v, offset, d)  // [B, 1, Lk', d]
		biasH := headOf(bias, n)       // [B, 1, Lq, Lk'] or nil
		blockedH := headOf(blocked, n) // [B, 1, Lq, Lk'] or nil
		scale := o.Scale
		if scale == 0 {
			scale = 1 / math.Sqrt(float64(d))
		}
		outH, wH := SDPAMaskedFill(qh, kh, vh, biasH, blockedH, spec.FillValue(), scale) // [B, 1, Lq, d], [B, 1, Lq, Lk']
		for b := 0; b < B; b++ {
			for i := 0; i < Lq; i++ {
				for c := 0; c < d; c++ {
					merged.Set(outH.At(b, 0, i, c), b, i, offset+c)
				}
				for j := 0; j < LkAll; j++ {
					weights.Set(wH.At(b, 0, i, j), b, n, i, j)
				}
			}
		}
		offset += d
	}

	// 6) Output projection: [B, Lq, E] → [B, Lq, E].
	out = Linear(merged, p.Wo, p.Bo)
	return out, weights, nil
}

// AverageHeads averages attention weights over the heads:
// [B, h, Lq, Lk] → [B, Lq, Lk] (PyTorch's average_attn_weights=True).
func AverageHeads(weights *Tensor) *Tensor {
	B, h, Lq, Lk := weights.Shape[0], weights.Shape[1], weights.Shape[2], weights.Shape[3]
	avg := New(B, Lq, Lk)
	for b := 0; b < B; b++ {
		for i := 0; i < Lq; i++ {
			for j := 0; j < Lk; j++ {
				sum := 0.0
				for n := 0; n < h; n++ {
					sum += weights.At(b, n, i, j)
				}
				avg.Set(sum/float64(h), b, i, j)
			}
		}
	}
	return avg
}

// appendKeyRow appends the same row to every batch element:
// x [B, L, E], row [E] → [B, L+1, E].
func appendKeyRow(x *Tensor, row []float64) *Tensor {
	B, L, E := x.Shape[0], x.Shape[1], x.Shape[2]
	out := New(B, L+1, E)
	for b := 0; b < B; b++ {
		for l := 0; l < L; l++ {
			for e := 0; e < E; e++ {
				out.Set(x.At(b, l, e), b, l, e)
			}
		}
		for e := 0; e < E; e++ {
			out.Set(row[e], b, L, e)
		}
	}
	return out
}

// headOf returns head n of x [B, h, Lq, Lk] as [B, 1, Lq, Lk]; nil stays nil.
func headOf(x *Tensor, n int) *Tensor {
	if x == nil {
		return nil
	}
	B, Lq, Lk := x.Shape[0], x.Shape[2], x.Shape[3]
	out := New(B, 1, Lq, Lk)
	for b := 0; b < B; b++ {
		for i := 0; i < Lq; i++ {
			for j := 0; j < Lk; j++ {
				out.Set(x.At(b, n, i, j), b, 0, i, j)
			}
		}
	}
	return out
}

// headSlice cuts the columns [offset, offset+d) of x [B, L, E] and returns
// them as one head: [B, 1, L, d].
func headSlice(x *Tensor, offset, d int) *Tensor {
	B, L := x.Shape[0], x.Shape[1]
	out := New(B, 1, L, d)
	for b := 0; b < B; b++ {
		for l := 0; l < L; l++ {
			for c := 0; c < d; c++ {
				out.Set(x.At(b, l, offset+c), b, 0, l, c)
			}
		}
	}
	return out
}
