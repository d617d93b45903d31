package mhalib

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Projections: the "4 fully-connected functions" of multi-head attention.
//
//	q = query·Wqᵀ + bq   [B, Lq, E]      Wq: [E, E]
//	k = key  ·Wkᵀ + bk   [B, Lk, E]      Wk: [E, kdim]
//	v = value·Wvᵀ + bv   [B, Lk, E]      Wv: [E, vdim]
//	out = heads·Woᵀ + bo [B, Lq, E]      Wo: [E, E]
//
// Variables carry PyTorch's state_dict names, in the attention's scope:
//
//   - fused (kdim == vdim == E): in_proj_weight [3E, E] = [Wq; Wk; Wv] stacked by rows,
//   - separate: q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim],
//   - in_proj_bias [3E] = [bq; bk; bv] in both forms,
//   - out_proj/weight [E, E] and out_proj/bias [E] (sub-scope "out_proj").
//
// Both forms compute the same thing for the same weights. For self-attention (the same node as
// query, key and value) the fused weight multiplies the input once, x·in_proj_weightᵀ
// [B, L, 3E] (PyTorch's packed path), and the result is cut into q, k, v: one large matrix
// product runs faster than three smaller ones, and the cut costs no more than the head split
// that follows. Otherwise the fused weight is cut into Wq, Wk, Wv by reshaping it to [3, E, E]
// and gathering one entry (Gather, not Slice: it can be differentiated on every backend).

// Variable names (PyTorch's nn.MultiheadAttention state_dict keys).
const (
	VarInProjWeight = "in_proj_weight"
	VarInProjBias   = "in_proj_bias"
	VarQProjWeight  = "q_proj_weight"
	VarKProjWeight  = "k_proj_weight"
	VarVProjWeight  = "v_proj_weight"
	VarBiasK        = "bias_k"
	VarBiasV        = "bias_v"
	ScopeOutProj    = "out_proj"
)

// inProjection computes q [B, Lq, E], k [B, Lk, kvWidth], v [B, Lk, kvWidth] from query
// [B, Lq, E], key [B, Lk, kdim], value [B, Lk, vdim], creating the variables in ctx's scope.
// kvWidth is E, or Hkv·dk < E for grouped-query attention (separate projections only).
func inProjection(ctx *context.Context, query, key, value *Node, embedDim, kvWidth int, separate, useBias bool, init Init) (q, k, v *Node) {
	if kvWidth != embedDim {
		return gqaInProjection(ctx, query, key, value, embedDim, kvWidth, useBias, init)
	}
	g := query.Graph()
	dtype := query.DType()
	E := embedDim
	kdim, vdim := key.Shape().Dim(-1), value.Shape().Dim(-1)

	var bias *Node // [3E]
	if useBias {
		var biasInit context.VariableInitializer = zeroInit
		if init == InitTorchLinear {
			// nn.Linear's bias bound 1/√fan_in for each of the three projections.
			bounds := []float64{torchLinearBound(E), torchLinearBound(kdim), torchLinearBound(vdim)}
			biasInit = func(g *Graph, shape shapes.Shape) *Node {
				u := ctx.RandomUniform(g, shapes.Make(shape.DType, 3, E))                          // U[0,1), [3, E]
				b := ConvertDType(Reshape(Const(g, bounds), 3, 1), shape.DType)                    // [3, 1]
				return Reshape(Mul(AddScalar(MulScalar(u, 2), -1), BroadcastToDims(b, 3, E)), 3*E) // [3E]
			}
		}
		bias = variable(ctx, g, VarInProjBias, dtype, []int{3 * E}, biasInit) // [3E]
	}
	// splitBias cuts bias in bq, bk, bv [E] each (nil without bias); only the paths that use
	// them build them (the pure-Go backend fails on nodes that no output uses).
	splitBias := func() (bq, bk, bv *Node) {
		if bias == nil {
			return nil, nil, nil
		}
		return sliceAxis(bias, 0, 0, E), sliceAxis(bias, 0, E, E), sliceAxis(bias, 0, 2*E, E) // [E] each
	}

	weightInit := func(out, in int) context.VariableInitializer {
		if init == InitTorchLinear {
			return uniformInit(ctx, torchLinearBound(in))
		}
		return uniformInit(ctx, XavierBound(in, out))
	}

	if separate {
		wq := variable(ctx, g, VarQProjWeight, dtype, []int{E, E}, weightInit(E, E))       // [E, E]
		wk := variable(ctx, g, VarKProjWeight, dtype, []int{E, kdim}, weightInit(E, kdim)) // [E, kdim]
		wv := variable(ctx, g, VarVProjWeight, dtype, []int{E, vdim}, weightInit(E, vdim)) // [E, vdim]
		bq, bk, bv := splitBias()
		return applyLinear(query, wq, bq), applyLinear(key, wk, bk), applyLinear(value, wv, bv)
	}

	// Fused: PyTorch's xavier_uniform_ treats [3E, E] as one matrix: fan_in = E, fan_out = 3E.
	w := variable(ctx, g, VarInProjWeight, dtype, []int{3 * E, E}, weightInit(3*E, E)) // [3E, E]
	if rows := query.Shape().Size() / query.Shape().Dim(-1); query == key && key == value && (differentiableSlices(g) || rows <= fewRows) {
		// Self-attention: one product with the whole weight, then the output cut in three.
		// Every output element is the same dot product as with the weight cut first; one
		// [B·L, E]×[E, 3E] matrix product keeps the cores busier than three of [E, E]. On the
		// pure-Go backend only for a few rows (a decoding step): there each cut of the last
		// axis is a Gather between two transposes of the whole [B, L, 3E] output (take.go),
		// which cost seed003 a sixth of its time, while cutting the weight copies it (3E·E
		// values; twice as many when it went through a Reshape), which for one row cost the
		// modern suite's decoding step (E 2048) ~100 MB of copies per layer, more than the
		// product reads.
		qkv := applyLinear(query, w, bias)                                                 // [B, L, 3E]
		return sliceAxis(qkv, 2, 0, E), sliceAxis(qkv, 2, E, E), sliceAxis(qkv, 2, 2*E, E) // [B, L, E] each
	}
	// Wq, Wk, Wv: rows of w, each cut straight from the variable (on the pure-Go backend one
	// Gather of E rows each; through a Reshape to [3, E, E] first, the variable's buffer was
	// copied once more: 0.7 ms of seed003's 47 in fastgo's BenchmarkMHA op profile), each right
	// before its product: w is then read again after the products of Wq and Wk, and the last cut
	// is w's last use, so that fastgo reads all three in place instead of copying them
	// (gatherview.go).
	bq, bk, bv := splitBias()
	q = applyLinear(query, sliceAxis(w, 0, 0, E), bq)   // Wq [E, E]
	k = applyLinear(key, sliceAxis(w, 0, E, E), bk)     // Wk [E, E]
	v = applyLinear(value, sliceAxis(w, 0, 2*E, E), bv) // Wv [E, E]
	return q, k, v
}

// gqaInProjection is inProjection with keys and values projected to kvWidth < E features
// (grouped-query attention): q_proj_weight [E, E], k_proj_weight [kvWidth, kdim],
// v_proj_weight [kvWidth, vdim], in_proj_bias [E + 2·kvWidth] = [bq; bk; bv]. Initialised as the
// separate projections of MHA (Xavier-uniform or nn.Linear's bounds per weight; zero bias, or
// nn.Linear's bias bound 1/√E for all of it with InitTorchLinear).
func gqaInProjection(ctx *context.Context, query, key, value *Node, E, kvWidth int, useBias bool, init Init) (q, k, v *Node) {
	g, dtype := query.Graph(), query.DType()
	kdim, vdim := key.Shape().Dim(-1), value.Shape().Dim(-1)
	weightInit := func(out, in int) context.VariableInitializer {
		if init == InitTorchLinear {
			return uniformInit(ctx, torchLinearBound(in))
		}
		return uniformInit(ctx, XavierBound(in, out))
	}
	wq := variable(ctx, g, VarQProjWeight, dtype, []int{E, E}, weightInit(E, E))                   // [E, E]
	wk := variable(ctx, g, VarKProjWeight, dtype, []int{kvWidth, kdim}, weightInit(kvWidth, kdim)) // [kvWidth, kdim]
	wv := variable(ctx, g, VarVProjWeight, dtype, []int{kvWidth, vdim}, weightInit(kvWidth, vdim)) // [kvWidth, vdim]
	var bq, bk, bv *Node
	if useBias {
		var biasInit context.VariableInitializer = zeroInit
		if init == InitTorchLinear {
			biasInit = uniformInit(ctx, torchLinearBound(E))
		}
		bias := variable(ctx, g, VarInProjBias, dtype, []int{E + 2*kvWidth}, biasInit) // [E + 2·kvWidth]
		bq, bk, bv = sliceAxis(bias, 0, 0, E), sliceAxis(bias, 0, E, kvWidth), sliceAxis(bias, 0, E+kvWidth, kvWidth)
	}
	return applyLinear(query, wq, bq), applyLinear(key, wk, bk), applyLinear(value, wv, bv)
}

// outProjection is out_proj: x [B, Lq, E] → [B, Lq, E], variables out_proj/weight, out_proj/bias.
// nn.MultiheadAttention initialises it as nn.Linear but with a zero bias.
func outProjection(ctx *context.Context, x *Node, embedDim int, useBias bool, init Init) *Node {
	return linear(ctx.In(ScopeOutProj), x, embedDim, useBias, linearWeightInit, linearBiasInit, init)
}
