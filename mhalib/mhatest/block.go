package mhatest

import "fmt"

// LayerNormEps is the epsilon of PreLNBlock's LayerNorm (PyTorch's default).
const LayerNormEps = 1e-5

// PreLNBlock is a pre-LayerNorm residual self-attention block (dropout 0):
//
//	y = x + MHA(LN(x), LN(x), LN(x))
//
// x: [B, L, E], lnWeight, lnBias: [E] (or nil: 1 and 0) → y: [B, L, E].
// LN uses eps LayerNormEps = 1e-5.
func PreLNBlock(x, lnWeight, lnBias *Tensor, p MHAParams, o MHAOptions) (*Tensor, error) {
	if x.Rank() != 3 || x.Shape[2] != p.E {
		return nil, fmt.Errorf("mhatest: PreLNBlock: x shape %v, want [B, L, %d]", x.Shape, p.E)
	}
	for _, t := range []struct {
		name string
		t    *Tensor
	}{{"lnWeight", lnWeight}, {"lnBias", lnBias}} {
		if t.t != nil && !SameShape(t.t.Shape, []int{p.E}) {
			return nil, fmt.Errorf("mhatest: PreLNBlock: %s shape %v, want [%d]", t.name, t.t.Shape, p.E)
		}
	}
	normed := LayerNorm(x, lnWeight, lnBias, LayerNormEps) // [B, L, E]
	attn, _, err := MHA(p, normed, normed, normed, o)      // [B, L, E]
	if err != nil {
		return nil, err
	}
	y := x.Clone()
	for i := range y.Data {
		y.Data[i] += attn.Data[i]
	}
	return y, nil
}
