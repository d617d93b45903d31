package smollm2

import (
	"fmt"
	"slices"

	"github.com/mhalab/mhalab/models/gguf"
	"github.com/mhalab/mhalab/models/quant"
)

// Weights are the model's parameters dequantised to float32, in Hugging Face's layout and
// names (a Linear weight is [out, in], row-major). GGUF names map as
//
//	token_embd.weight             model.embed_tokens.weight      [V, D] (Q8_0)
//	blk.N.attn_norm.weight        model.layers.N.input_layernorm.weight           [D]
//	blk.N.attn_q.weight           model.layers.N.self_attn.q_proj.weight          [H·hd, D] (un-permuted)
//	blk.N.attn_k.weight           model.layers.N.self_attn.k_proj.weight          [Hkv·hd, D] (un-permuted)
//	blk.N.attn_v.weight           model.layers.N.self_attn.v_proj.weight          [Hkv·hd, D]
//	blk.N.attn_output.weight      model.layers.N.self_attn.o_proj.weight          [D, H·hd]
//	blk.N.ffn_norm.weight         model.layers.N.post_attention_layernorm.weight  [D]
//	blk.N.ffn_gate.weight         model.layers.N.mlp.gate_proj.weight             [F, D]
//	blk.N.ffn_up.weight           model.layers.N.mlp.up_proj.weight               [F, D]
//	blk.N.ffn_down.weight         model.layers.N.mlp.down_proj.weight             [D, F]
//	output_norm.weight            model.norm.weight                               [D]
//	output.weight (if present)    lm_head.weight [V, D]; absent: tied to embed_tokens
//
// Every tensor of the file must be used, and have the shape the configuration implies.
type Weights struct {
	Tensors map[string]*Tensor // by Hugging Face name

	// Packed are the 2-D tensors stored as Q8_0 or Q4_1 in the file, kept packed (rows
	// un-permuted as in Tensors), by Hugging Face name: a packed runner (NewRunner on a backend
	// where quant.Available) multiplies by these instead of the float32 ones. A tied lm_head
	// is packed only under model.embed_tokens.weight.
	Packed map[string]*Packed
}

// Packed is a packed matrix and the float32 tensor dequantised from it: a runner uses the
// packed one only while Weights.Tensors still holds that very tensor (a model whose tensor was
// replaced — WithKVHeads, an edited copy — multiplies by the float32 one).
type Packed struct {
	Matrix *quant.Matrix
	Float  *Tensor
}

// packed returns the packed matrix of name, if it still matches Tensors[name].
func (w *Weights) packed(name string) (*quant.Matrix, bool) {
	p, ok := w.Packed[name]
	if !ok || w.Tensors[name] != p.Float {
		return nil, false
	}
	return p.Matrix, true
}

// Tensor is a float32 array with its row-major shape.
type Tensor struct {
	Shape []int
	Data  []float32
}

// hfName maps a GGUF layer tensor suffix to Hugging Face's.
var hfLayerNames = map[string]string{
	"attn_norm":   "input_layernorm",
	"attn_q":      "self_attn.q_proj",
	"attn_k":      "self_attn.k_proj",
	"attn_v":      "self_attn.v_proj",
	"attn_output": "self_attn.o_proj",
	"ffn_norm":    "post_attention_layernorm",
	"ffn_gate":    "mlp.gate_proj",
	"ffn_up":      "mlp.up_proj",
	"ffn_down":    "mlp.down_proj",
}

// ReadWeights reads and dequantises every tensor of f, un-permutes attn_q/attn_k (UnpermuteRoPE)
// and checks the shapes against cfg.
func ReadWeights(f *gguf.File, cfg Config) (*Weights, error) {
	D, F, V := cfg.HiddenSize, cfg.IntermediateSize, cfg.VocabSize
	Q, KV := cfg.NumAttentionHeads*cfg.HeadDim, cfg.NumKeyValueHeads*cfg.HeadDim
	type want struct {
		gguf, hf string
		shape    []int
		heads    int // > 0: un-permute rows for that many heads
	}
	wants := []want{
		{"token_embd.weight", "model.embed_tokens.weight", []int{V, D}, 0},
		{"output_norm.weight", "model.norm.weight", []int{D}, 0},
	}
	if _, err := f.Tensor("output.weight"); err == nil {
		wants = append(wants, want{"output.weight", "lm_head.weight", []int{V, D}, 0})
	}
	shapes := map[string][]int{
		"attn_norm": {D}, "ffn_norm": {D}, "attn_q": {Q, D}, "attn_k": {KV, D}, "attn_v": {KV, D},
		"attn_output": {D, Q}, "ffn_gate": {F, D}, "ffn_up": {F, D}, "ffn_down": {D, F},
	}
	for n := 0; n < cfg.NumHiddenLayers; n++ {
		for _, s := range []string{"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"} {
			heads := 0
			switch s {
			case "attn_q":
				heads = cfg.NumAttentionHeads
			case "attn_k":
				heads = cfg.NumKeyValueHeads
			}
			wants = append(wants, want{fmt.Sprintf("blk.%d.%s.weight", n, s),
				fmt.Sprintf("model.layers.%d.%s.weight", n, hfLayerNames[s]), shapes[s], heads})
		}
	}
	if len(wants) != len(f.Tensors) {
		used := map[string]bool{}
		for _, w := range wants {
			used[w.gguf] = true
		}
		for _, t := range f.Tensors {
			if !used[t.Name] {
				return nil, fmt.Errorf("smollm2: %s: unexpected tensor %q (%s %v) for a %d-layer Llama", f.Name, t.Name, t.Type, t.Shape(), cfg.NumHiddenLayers)
			}
		}
	}
	w := &Weights{Tensors: make(map[string]*Tensor, len(wants)), Packed: map[string]*Packed{}}
	for _, x := range wants {
		data, shape, err := f.TensorFloat32(x.gguf)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(shape, x.shape) {
			return nil, fmt.Errorf("smollm2: %s: tensor %q has shape %v, want %v", f.Name, x.gguf, shape, x.shape)
		}
		if x.heads > 0 {
			data = UnpermuteRoPE(data, x.heads, shape[0]/x.heads, shape[1])
		}
		w.Tensors[x.hf] = &Tensor{Shape: shape, Data: data}
		if err := w.readPacked(f, x.gguf, x.hf, x.heads); err != nil {
			return nil, err
		}
	}
	if _, ok := w.Tensors["lm_head.weight"]; !ok {
		w.Tensors["lm_head.weight"] = w.Tensors["model.embed_tokens.weight"] // tied
	}
	return w, nil
}

// UnpermuteRoPE undoes llama.cpp's row permutation of a q or k projection w [heads·hd, in]
// (row-major): llama.cpp's converter stores, within each head, the rows of Hugging Face's
// half-split layout (pairs (i, i + hd/2)) interleaved (pairs (2i, 2i+1)), for its interleaved
// RoPE. Viewing w as (heads, hd/2, 2, in) and swapping the middle axes gives Hugging Face's
// (heads, 2, hd/2, in):
//
//	hf[h, j·hd/2 + i, :] = gguf[h, 2i + j, :]     i < hd/2, j ∈ {0, 1}
//
// TestUnpermuteMatchesHuggingFace checks it against the weights transformers loads (difference
// 0); TestInterleavedRoPEOnRawRows checks that interleaved RoPE on the raw rows gives the same
// attention scores.
func UnpermuteRoPE(w []float32, heads, hd, in int) []float32 {
	out := make([]float32, len(w))
	half := hd / 2
	for h := 0; h < heads; h++ {
		for i := 0; i < half; i++ {
			for j := 0; j < 2; j++ {
				src := (h*hd + 2*i + j) * in
				dst := (h*hd + j*half + i) * in
				copy(out[dst:dst+in], w[src:src+in])
			}
		}
	}
	return out
}

// readPacked keeps tensor name of f in w.Packed as hf when it is a Q8_0 or Q4_1 matrix, its
// rows un-permuted for heads > 0 (UnpermuteRoPE's order, which moves whole rows).
func (w *Weights) readPacked(f *gguf.File, name, hf string, heads int) error {
	t, err := f.Tensor(name)
	if err != nil {
		return err
	}
	shape := t.Shape()
	if !quant.Packable(t.Type) || len(shape) != 2 {
		return nil
	}
	raw, _, err := f.TensorBytes(name)
	if err != nil {
		return err
	}
	m, err := quant.NewMatrix(t.Type, shape[0], shape[1], raw)
	if err != nil {
		return fmt.Errorf("smollm2: %s: tensor %q: %w", f.Name, name, err)
	}
	if heads > 0 {
		m = m.PermuteRows(unpermutedRows(heads, shape[0]/heads))
	}
	w.Packed[hf] = &Packed{Matrix: m, Float: w.Tensors[hf]}
	return nil
}

// unpermutedRows is UnpermuteRoPE as a row order: row h·hd + j·hd/2 + i of Hugging Face's
// layout is row h·hd + 2i + j of the file's.
func unpermutedRows(heads, hd int) []int {
	from := make([]int, heads*hd)
	for h := range heads {
		for i := range hd / 2 {
			for j := range 2 {
				from[h*hd+j*hd/2+i] = h*hd + 2*i + j
			}
		}
	}
	return from
}
