package parity

import (
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/torchio"
)

// Run computes with mhalib, on backend, everything the reference holds a float64 result for:
// "attn_output", "attn_output_weights" (when PyTorch returned them), "grad.query", "grad.key",
// "grad.value" (the inputs that were differentiated) and "grad.param.<name>" for every
// parameter, with loss = Σ attn_output ⊙ input.cotangent, from the reference's parameters and
// inputs, in PyTorch's layouts.
func Run(backend backends.Backend, ref *Reference) (map[string]*tensors.Tensor, error) {
	c := ref.Config
	ctx := context.New()
	// Every tensor is cloned: a tensor used by one backend cannot be used by another.
	local := func(t *tensors.Tensor) *tensors.Tensor {
		if t == nil {
			return nil
		}
		cl, err := t.LocalClone()
		if err != nil {
			panic(err)
		}
		return cl
	}
	params := ref.Params()
	for k, v := range params {
		params[k] = local(v)
	}
	// scopeOf maps a variable's ScopeAndName back to the parameter's PyTorch name.
	var scopePrefix string
	switch c.Kind {
	case "mha", "seed000", "seed001", "seed003":
		scopePrefix = "/" + mhalib.DefaultScope + "/"
		if err := mhalib.LoadStateDict(ctx, mhalib.DefaultScope, params); err != nil {
			return nil, err
		}
	case "seed003blk":
		scopePrefix = "/"
		attn := map[string]*tensors.Tensor{}
		for k, v := range params {
			switch {
			case strings.HasPrefix(k, "attn."):
				attn[strings.TrimPrefix(k, "attn.")] = v
			case k == "norm.weight" || k == "norm.bias":
				if err := mhalib.Try(func() { ctx.In("norm").VariableWithValue(strings.TrimPrefix(k, "norm."), v) }); err != nil {
					return nil, err
				}
			default:
				return nil, fmt.Errorf("parity: %s: unexpected parameter %q", c.Name, k)
			}
		}
		if err := mhalib.LoadStateDict(ctx, "attn", attn); err != nil {
			return nil, err
		}
	case "sdpa":
		if len(params) > 0 {
			return nil, fmt.Errorf("parity: %s: SDPA has no parameters, the file has %d", c.Name, len(params))
		}
	default:
		return nil, fmt.Errorf("parity: %s: unknown kind %q", c.Name, c.Kind)
	}

	// Graph inputs, in order: the differentiated inputs, then masks, then the cotangent.
	var diffNames []string
	for _, n := range []string{"query", "key", "value"} {
		if ref.Tensors["input."+n] != nil {
			diffNames = append(diffNames, n)
		}
	}
	var maskNames []string
	for _, n := range []string{"attn_mask", "key_padding_mask", "mask"} {
		if ref.Tensors["input."+n] != nil {
			maskNames = append(maskNames, n)
		}
	}
	var args []any
	for _, n := range diffNames {
		args = append(args, local(ref.Tensors["input."+n]))
	}
	for _, n := range maskNames {
		args = append(args, local(ref.Tensors["input."+n]))
	}
	cot := local(ref.Tensors["input.cotangent"])
	if cot == nil {
		return nil, fmt.Errorf("parity: %s: no input.cotangent", c.Name)
	}
	args = append(args, cot)

	var outNames []string // names of the graph's outputs, set while building it
	fn := func(ctx *context.Context, inputs []*Node) []*Node {
		in := map[string]*Node{}
		for i, n := range diffNames {
			in[n] = inputs[i]
		}
		masks := map[string]*Node{}
		for i, n := range maskNames {
			masks[n] = inputs[len(diffNames)+i]
		}
		out, weights := build(ctx, c, in, masks)
		loss := ReduceAllSum(Mul(out, inputs[len(inputs)-1]))
		outNames = []string{"attn_output"}
		outputs := []*Node{out}
		if weights != nil {
			outNames = append(outNames, "attn_output_weights")
			outputs = append(outputs, weights)
		}
		diff := make([]*Node, len(diffNames))
		for i, n := range diffNames {
			diff[i] = in[n]
			outNames = append(outNames, "grad."+n)
		}
		outputs = append(outputs, Gradient(loss, diff...)...)
		varNames, varGrads := mhalib.VariableGradients(ctx, loss)
		for i, vn := range varNames {
			outNames = append(outNames, "grad.param."+strings.ReplaceAll(strings.TrimPrefix(vn, scopePrefix), "/", "."))
			outputs = append(outputs, varGrads[i])
		}
		return outputs
	}
	exec, err := context.NewExec(backend, ctx, fn)
	if err != nil {
		return nil, err
	}
	defer exec.Finalize()
	results, err := exec.Exec(args...)
	if err != nil {
		return nil, fmt.Errorf("parity: %s: %w", c.Name, err)
	}
	if len(results) != len(outNames) {
		return nil, fmt.Errorf("parity: %s: %d results for %d names", c.Name, len(results), len(outNames))
	}
	m := make(map[string]*tensors.Tensor, len(results))
	for i, n := range outNames {
		m[n] = results[i]
	}
	return m, nil
}

// build is the mhalib graph of one case: in holds query/key/value in PyTorch's layout, masks the
// mask inputs; it returns the output in PyTorch's layout and the attention weights when the
// reference has them (nil otherwise).
func build(ctx *context.Context, c Config, in, masks map[string]*Node) (out, weights *Node) {
	switch c.Kind {
	case "mha":
		q, k, v := in["query"], in["key"], in["value"]
		if !c.BatchFirst { // [L, B, E] → [B, L, E]
			q, k, v = TransposeAllDims(q, 1, 0, 2), TransposeAllDims(k, 1, 0, 2), TransposeAllDims(v, 1, 0, 2)
		}
		b := mhalib.MultiHeadAttention(ctx, q, k, v, c.H).AddZeroAttn(c.AddZeroAttn)
		if m := masks["attn_mask"]; m != nil {
			b.AttnMask(torchio.MHAMask(m))
		}
		if m := masks["key_padding_mask"]; m != nil {
			b.KeyPaddingMask(torchio.MHAMask(m))
		}
		if c.IsCausal {
			b.Causal(mhalib.CausalTopLeft)
		}
		if c.NeedWeights {
			out, weights = b.DoneWithWeights(c.AverageAttnWeights)
		} else {
			out = b.Done()
		}
		if !c.BatchFirst {
			out = TransposeAllDims(out, 1, 0, 2) // [B, Lq, E] → [Lq, B, E]
		}
		return out, weights
	case "sdpa":
		b := mhalib.ScaledDotProductAttention(in["query"], in["key"], in["value"])
		if m := masks["attn_mask"]; m != nil {
			if m.DType() == dtypes.Bool {
				b.Mask(mhalib.MaskAttendWhereTrue(m)) // SDPA's bool masks: true = attend
			} else {
				b.Mask(mhalib.MaskAdditive(m))
			}
		}
		if c.IsCausal {
			b.Causal(mhalib.CausalTopLeft)
		}
		if c.Scale != nil {
			b.Scale(*c.Scale)
		}
		out, _ = b.Done()
		return out, nil
	case "seed000":
		b := mhalib.MultiHeadAttention(ctx, in["query"], in["key"], in["value"], c.H).Fill(mhalib.FillMinus1e9)
		if m := masks["mask"]; m != nil {
			// [B, 1, Lk] (padding) or [B, Lq, Lk] (subsequent), 1 = attend; the module unsqueezes
			// a head axis: [B, 1, 1|Lq, Lk].
			dims := m.Shape().Dimensions
			m = Reshape(m, dims[0], 1, dims[1], dims[2])
			m = BroadcastToDims(m, c.B, 1, c.Lq, c.Lk)
			b.AttnMask(mhalib.MaskAttendWhereTrue(m))
		}
		return b.DoneWithWeights(false)
	case "seed001", "seed003":
		x := in["query"] // self-attention: query = key = value = x
		var b *mhalib.MHABuilder
		if c.Kind == "seed001" {
			b = mhalib.MultiHeadAttention(ctx, x, x, x, len(c.HeadSizes)).HeadSizes(c.HeadSizes...)
		} else {
			b = mhalib.MultiHeadAttention(ctx, x, x, x, c.H)
		}
		if m := masks["mask"]; m != nil {
			b.AttnMask(mhalib.MaskAttendWhereTrue(m)) // [L, L], 1 = attend
		}
		return b.Done(), nil
	case "seed003blk":
		b := mhalib.PreLNBlock(ctx, in["query"], c.H)
		if m := masks["mask"]; m != nil {
			b.AttnMask(mhalib.MaskAttendWhereTrue(m))
		}
		return b.Done(), nil
	}
	panic(fmt.Errorf("parity: unknown kind %q", c.Kind))
}
