package smollm2

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/models/quant"
)

// The Llama decoder, top-down as Hugging Face's modeling_llama.py reads (B batch, n new
// positions, D = HiddenSize, H query heads, Hkv key/value heads, hd head size, F the MLP size,
// V the vocabulary):
//
//	tokens [B, n] → x = embed_tokens[tokens]                                 [B, n, D]
//	× NumHiddenLayers (scopes model/layers/N):
//	    h = RMSNorm(x)·input_layernorm                                       [B, n, D]
//	    q = RoPE(h·q_projᵀ), k = RoPE(h·k_projᵀ), v = h·v_projᵀ             [B, H, n, hd], [B, Hkv, n, hd]
//	    a = softmax(q·kᵀ/√hd + causal)·v, query head i reading kv head i / (H/Hkv)   (GQA)
//	    x = x + a·o_projᵀ                                                    [B, n, D]
//	    h = RMSNorm(x)·post_attention_layernorm
//	    x = x + (SiLU(h·gate_projᵀ) ⊙ h·up_projᵀ)·down_projᵀ               (SwiGLU)  [B, n, D]
//	logits = RMSNorm(x)·norm · lm_headᵀ                                      [B, n, V] (lm_head tied to embed_tokens)
//
// Variables carry Hugging Face's names as scopes: "model.layers.3.self_attn.q_proj.weight" is
// variable "weight" in scope /model/layers/3/self_attn/q_proj (LoadVariables; a float32 runner
// on XLA's CPU backend holds the layer matrices transposed instead, "weight_t": transposed.go).
// With a KV cache (StepLogits) the keys and values of layer N live in the session's scope
// /<session>/layers/N, in KVCache.Step's chunks when the cache has more than one (maxLen > 512).

// LoadVariables puts the weights into ctx as variables named by their Hugging Face names.
func (m *Model) LoadVariables(ctx *context.Context) { m.loadVariables(ctx, false, false) }

// loadVariables is LoadVariables; with packed, each matrix of Weights.Packed becomes a
// quant carrier, variable "packed" in the matrix's scope, instead of its float32 "weight"
// (embed_tokens keeps its float32 too: the embedding gathers rows of it). With transposed, each
// layer's projection W [out, in] is loaded transposed instead, as variable "weight_t" [in, out]
// (transposed.go).
func (m *Model) loadVariables(ctx *context.Context, packed, transposed bool) {
	carry := func(scope string, pm *quant.Matrix) {
		words, shape, err := pm.Carrier()
		if err != nil {
			panic(err) // every GGUF matrix shape has a carrier (Bt = 1 at worst)
		}
		ctx.InAbsPath(scope).VariableWithValue("packed", tensors.FromFlatDataAndDimensions(words, shape[:]...))
	}
	stacked := map[string]bool{} // weights loaded as part of a stacked carrier (fused.go)
	for i := range m.Config.NumHiddenLayers {
		for _, f := range fusions(layerPath(i)) {
			if pm, ok := m.Weights.stack(f[1:]); packed && ok {
				carry(scopeOf(f[0]), pm)
				for _, part := range f[1:] {
					stacked[part+".weight"] = true
				}
			}
		}
	}
	for name, t := range m.Weights.Tensors {
		if name == "lm_head.weight" && t == m.Weights.Tensors["model.embed_tokens.weight"] || stacked[name] {
			continue // tied: the head reads embed_tokens; stacked: in its fused carrier
		}
		scope, leaf := splitName(name)
		if pm, ok := m.Weights.packed(name); packed && ok {
			carry(scope, pm)
			if name != "model.embed_tokens.weight" {
				continue
			}
		}
		if transposed && layerMatrix(name) {
			ctx.InAbsPath(scope).VariableWithValue(transposedLeaf, transposeOf(t))
			continue
		}
		ctx.InAbsPath(scope).VariableWithValue(leaf, tensorOf(t))
	}
}

// matmul is x·Wᵀ for x [..., in] and the weight W [out, in] of a Hugging Face name: from its
// quant carrier when the context holds one (a packed runner), else from the float32 weight,
// stored transposed ("weight_t") or as it is.
func matmul(ctx *context.Context, x *Node, name string) *Node {
	scope, _ := splitName(name)
	if v := ctx.GetVariableByScopeAndName(scope, "packed"); v != nil {
		return quant.Dot(x, v.ValueGraph(x.Graph())) // [..., out]
	}
	if v := ctx.GetVariableByScopeAndName(scope, transposedLeaf); v != nil {
		return DotGeneral(x, []int{x.Rank() - 1}, nil, v.ValueGraph(x.Graph()), []int{0}, nil) // Wᵀ [in, out] → [..., out]
	}
	w := weight(ctx, x.Graph(), name)                                // [out, in]
	return DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil) // [..., out]
}

// weight returns the loaded variable of a Hugging Face name; a missing one is an error (never a
// freshly initialised variable: a typo in a name must not give a random model).
func weight(ctx *context.Context, g *Graph, name string) *Node {
	scope, leaf := splitName(name)
	v := ctx.GetVariableByScopeAndName(scope, leaf)
	if v == nil {
		panic(fmt.Errorf("smollm2: weight %q is not loaded (variable %s/%s)", name, scope, leaf))
	}
	return v.ValueGraph(g)
}

// linear computes x·Wᵀ for x [..., in] and the weight W [out, in] of module path: [..., out].
func linear(ctx *context.Context, x *Node, path string) *Node {
	return matmul(ctx, x, path+".weight") // [..., out]
}

// layerPath is the module path of layer i.
func layerPath(i int) string { return fmt.Sprintf("model.layers.%d", i) }

// embed returns embed_tokens[tokens]: tokens [B, n] int32 → [B, n, D].
func (m *Model) embed(ctx *context.Context, tokens *Node) *Node {
	if tokens.Rank() != 2 || tokens.DType() != dtypes.Int32 {
		panic(fmt.Errorf("smollm2: tokens shape %s: want int32 [batch, n]", tokens.Shape()))
	}
	B, n := tokens.Shape().Dim(0), tokens.Shape().Dim(1)
	emb := weight(ctx, tokens.Graph(), "model.embed_tokens.weight") // [V, D]
	return Gather(emb, Reshape(tokens, B, n, 1))                    // [B, n, D]
}

// head returns the logits of x [B, n, D]: RMSNorm, then · lm_headᵀ → [B, n, V].
func (m *Model) head(ctx *context.Context, x *Node) *Node {
	g := x.Graph()
	x = rmsNorm(x, weight(ctx, g, "model.norm.weight"), m.Config.RMSNormEps) // [B, n, D]
	name := "lm_head.weight"
	if m.Weights.Tensors[name] == m.Weights.Tensors["model.embed_tokens.weight"] {
		name = "model.embed_tokens.weight"
	}
	return matmul(ctx, x, name) // [B, n, V]
}

// mlp is SwiGLU: (SiLU(h·gateᵀ) ⊙ h·upᵀ)·downᵀ, h [B, n, D] → [B, n, D].
func mlp(ctx *context.Context, h *Node, path string) *Node {
	var gate, up *Node // [B, n, F]
	if fused := ctx.GetVariableByScopeAndName(scopeOf(path+".gate_up_proj"), "packed"); fused != nil {
		y := quant.Dot(h, fused.ValueGraph(h.Graph())) // [B, n, 2F] (fused.go)
		F := y.Shape().Dim(-1) / 2
		gate, up = SliceAxis(y, y.Rank()-1, AxisRange(0, F)), SliceAxis(y, y.Rank()-1, AxisRange(F, 2*F))
	} else {
		gate = linear(ctx, h, path+".gate_proj")
		up = linear(ctx, h, path+".up_proj")
	}
	act := Mul(gate, Sigmoid(gate)) // SiLU [B, n, F]
	return linear(ctx, Mul(act, up), path+".down_proj")
}

// block runs decoder layer i on x [B, n, D] at the positions of p (p.pos a scalar int32 node);
// with cache, keys and values are stored in it (KVCache.Step, or Append when it is one chunk)
// and attention spans the cache. It returns the new x [B, n, D] and, without a cache, the
// attention weights [B, H, n, n] (nil with one).
func (m *Model) block(ctx *context.Context, x *Node, p *positions, i int, cache *mhalib.KVCache, cacheScope string) (*Node, *Node) {
	return m.blockWith(ctx, x, p, i, cache, cacheScope, nil)
}

// blockWith is block with heads (when not nil) applied to the heads' outputs before the output
// projection: heads(a [B, H, n, hd]) → [B, H, n, hd] (probe.go reads and ablates heads there).
func (m *Model) blockWith(ctx *context.Context, x *Node, p *positions, i int, cache *mhalib.KVCache, cacheScope string, heads func(a *Node) *Node) (*Node, *Node) {
	c := m.Config
	g := x.Graph()
	B, n := x.Shape().Dim(0), x.Shape().Dim(1)
	H, hd := c.NumAttentionHeads, c.HeadDim
	path := layerPath(i)
	h := rmsNorm(x, weight(ctx, g, path+".input_layernorm.weight"), c.RMSNormEps) // [B, n, D]
	q, k, v := m.projectQKV(ctx, h, p, path)                                      // [B, H, n, hd], [B, Hkv, n, hd] ×2, q and k rotated
	scale := 1 / math.Sqrt(float64(hd))
	var a, w *Node
	switch {
	case cache == nil:
		a, w = groupedAttention(q, k, v, p, scale) // [B, H, n, hd], [B, H, n, n]
	case cache.ChunkLen() < cache.Cap():
		// In chunks (mhalib/kvchunks.go): a one-token step rewrites only the tail chunk.
		a = cache.Step(ctx.InAbsPath(cachePath(cacheScope, i)), q, k, v, p.pos, scale) // [B, H, n, hd]
	default:
		// One chunk (maxLen ≤ 512): Append rewrites the whole cache as Step would, and the go
		// backend runs Append + groupedAttention faster (BenchmarkDecodeContext, 128 positions).
		keys, values := appendOne(ctx.InAbsPath(cachePath(cacheScope, i)), cache, p, k, v) // [B, Hkv, maxLen, hd]
		a, _ = groupedAttention(q, keys, values, p, scale)                                 // [B, H, n, hd]
	}
	if heads != nil {
		a = heads(a) // [B, H, n, hd]
	}
	a = Reshape(headsSecond(a), B, n, H*hd)                                               // [B, n, H·hd]
	x = Add(x, linear(ctx, a, path+".self_attn.o_proj"))                                  // [B, n, D]
	h = rmsNorm(x, weight(ctx, g, path+".post_attention_layernorm.weight"), c.RMSNormEps) // [B, n, D]
	return Add(x, mlp(ctx, h, path+".mlp")), w                                            // [B, n, D]
}

// projectQKV returns the attention inputs of h [B, n, D] for the layer at path: q [B, H, n, hd]
// and k [B, Hkv, n, hd] rotated by RoPE at p's positions, v [B, Hkv, n, hd]. With the fused
// carrier of a packed runner (qkvPath) the three projections are one matrix–vector product and
// q and k rotate together.
func (m *Model) projectQKV(ctx *context.Context, h *Node, p *positions, path string) (q, k, v *Node) {
	c := m.Config
	B, n := h.Shape().Dim(0), h.Shape().Dim(1)
	H, Hkv, hd := c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim
	if fused := ctx.GetVariableByScopeAndName(scopeOf(qkvPath(path)), "packed"); fused != nil {
		y := Reshape(quant.Dot(h, fused.ValueGraph(h.Graph())), B, n, H+2*Hkv, hd) // [B, n, H+2Hkv, hd]
		qk := p.rope(SliceAxis(y, 2, AxisRange(0, H+Hkv)))                         // [B, n, H+Hkv, hd]
		q = headsFirst(SliceAxis(qk, 2, AxisRange(0, H)))                          // [B, H, n, hd]
		k = headsFirst(SliceAxis(qk, 2, AxisRange(H, H+Hkv)))                      // [B, Hkv, n, hd]
		v = headsFirst(SliceAxis(y, 2, AxisRange(H+Hkv, H+2*Hkv)))                 // [B, Hkv, n, hd]
		return q, k, v
	}
	split := func(y *Node, nh int) *Node { return Reshape(y, B, n, nh, hd) } // [B, n, nh·hd] → [B, n, nh, hd]
	q = headsFirst(p.rope(split(linear(ctx, h, path+".self_attn.q_proj"), H)))
	k = headsFirst(p.rope(split(linear(ctx, h, path+".self_attn.k_proj"), Hkv)))
	v = headsFirst(split(linear(ctx, h, path+".self_attn.v_proj"), Hkv))
	return q, k, v
}

// headsFirst is x [B, n, h, hd] as [B, h, n, hd] (a Reshape when n = 1: the same layout).
func headsFirst(x *Node) *Node {
	d := x.Shape().Dimensions
	if d[1] == 1 {
		return Reshape(x, d[0], d[2], 1, d[3])
	}
	return TransposeAllDims(x, 0, 2, 1, 3)
}

// headsSecond is x [B, h, n, hd] as [B, n, h, hd] (headsFirst's inverse).
func headsSecond(x *Node) *Node {
	d := x.Shape().Dimensions
	if d[2] == 1 {
		return Reshape(x, d[0], 1, d[1], d[3])
	}
	return TransposeAllDims(x, 0, 2, 1, 3)
}

// Logits runs the whole model over tokens [B, L] int32 (positions 0 … L−1, no cache):
// logits [B, L, V]. Row t depends on tokens 0 … t only.
func (m *Model) Logits(ctx *context.Context, tokens *Node) *Node {
	p := m.positions(ScalarZero(tokens.Graph(), dtypes.Int32), tokens.Shape().Dim(1))
	x := m.embed(ctx, tokens) // [B, L, D]
	for i := range m.Config.NumHiddenLayers {
		x, _ = m.block(ctx, x, p, i, nil, "")
	}
	return m.head(ctx, x) // [B, L, V]
}

// LogitsAndAttention is Logits that also returns every layer's attention weights, stacked:
// [NumHiddenLayers, B, H, L, L] (query rows, key columns; each row sums to 1 over keys ≤ query).
func (m *Model) LogitsAndAttention(ctx *context.Context, tokens *Node) (logits, weights *Node) {
	p := m.positions(ScalarZero(tokens.Graph(), dtypes.Int32), tokens.Shape().Dim(1))
	x := m.embed(ctx, tokens) // [B, L, D]
	ws := make([]*Node, m.Config.NumHiddenLayers)
	for i := range ws {
		var w *Node
		x, w = m.block(ctx, x, p, i, nil, "")
		ws[i] = InsertAxes(w, 0) // [1, B, H, L, L]
	}
	return m.head(ctx, x), Concatenate(ws, 0)
}

// cachePath is the scope of layer i's cache variables in session scope cacheScope.
func cachePath(cacheScope string, i int) string { return fmt.Sprintf("/%s/layers/%d", cacheScope, i) }

// StepLogits runs the model over the next n positions: tokens [B, n] int32 at positions
// [pos, pos+n) (pos a scalar int32 node from cache.Advance), the earlier positions' keys and
// values read from cache (one KVCache for all layers, in scope /cacheScope/layers/N: in chunks
// through KVCache.Step when it has more than one, else Append's [B, Hkv, maxLen, hd] "keys"
// and "values"; callers Advance the cache once before each run). It returns the
// logits [B, n, V], or with lastOnly those of the last position [B, 1, V] (generation needs no
// more, and the head is the largest matrix).
func (m *Model) StepLogits(ctx *context.Context, tokens, pos *Node, cache *mhalib.KVCache, cacheScope string, lastOnly bool) *Node {
	p := m.positions(pos, tokens.Shape().Dim(1))
	x := m.embed(ctx, tokens) // [B, n, D]
	for i := range m.Config.NumHiddenLayers {
		x, _ = m.block(ctx, x, p, i, cache, cacheScope)
	}
	if n := x.Shape().Dim(1); lastOnly && n > 1 {
		x = Slice(x, AxisRange(), AxisRange(n-1, n)) // [B, 1, D]
	}
	return m.head(ctx, x) // [B, n or 1, V]
}

// rmsNorm is x / √(mean(x²) + eps) ⊙ w over the last axis: x [..., D], w [D].
func rmsNorm(x, w *Node, eps float64) *Node {
	return mhalib.RMSNorm(x, w, eps)
}

// positions are the tables every layer shares for the n new positions from pos (positions.go).
func (m *Model) positions(pos *Node, n int) *positions {
	return newPositions(pos, n, m.Config.HeadDim, m.Config.RopeTheta)
}

// groupedAttention is causal attention with grouped key/value heads: q [B, H, n, hd] at
// p's positions [pos, pos+n), keys/values [B, Hkv, S, hd] at positions 0 … S−1; query head i reads
// kv head i / (H/Hkv), query row r sees key positions ≤ pos + r. Returns the output
// [B, H, n, hd] and the weights [B, H, n, S].
func groupedAttention(q, keys, values *Node, p *positions, scale float64) (*Node, *Node) {
	g := q.Graph()
	B, H, n, hd := q.Shape().Dim(0), q.Shape().Dim(1), q.Shape().Dim(2), q.Shape().Dim(3)
	Hkv, S := keys.Shape().Dim(1), keys.Shape().Dim(2)
	G := H / Hkv
	q5 := Reshape(q, B, Hkv, G, n, hd)                                           // [B, Hkv, G, n, hd]
	logits := DotGeneral(q5, []int{4}, []int{0, 1}, keys, []int{3}, []int{0, 1}) // [B, Hkv, G, n, S]
	logits = MulScalar(logits, scale)
	allowed := p.mask(logits.Shape().Dimensions) // [B, Hkv, G, n, S]
	logits = Where(allowed, logits, Scalar(g, logits.DType(), math.Inf(-1)))
	w := Softmax(logits, -1)                                                   // [B, Hkv, G, n, S]
	out := DotGeneral(w, []int{4}, []int{0, 1}, values, []int{2}, []int{0, 1}) // [B, Hkv, G, n, hd]
	return Reshape(out, B, H, n, hd), Reshape(w, B, H, n, S)
}
