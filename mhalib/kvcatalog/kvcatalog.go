// Package kvcatalog says what a decoder's KV cache costs, for configurations written as their
// model's config.json numbers, and lists published models' configurations.
//
// Every layer caches, for every position of the context, what its attention needs of that
// position later:
//
//	MHA    keys and values of every head      2·H·dh     numbers per token and layer
//	GQA    keys and values of the Hkv heads   2·Hkv·dh   (H/Hkv times less)
//	MQA    one key/value head                 2·dh
//	MLA    the latent c_kv and the RoPE key   dc + dr    (DeepSeek-V2, Table 1: (dc + dR)·l)
//
// and a sliding-window layer keeps at most its window of positions, whatever the context.
// Bytes adds it up; Published lists real models, with their config.json numbers. These are
// sizes of the tensors, not measurements: a runtime adds its own overhead (paging, alignment),
// and a cache allocated at full capacity (as mhalib.KVCache) costs its capacity.
package kvcatalog

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"

	"github.com/mhalab/mhalab/mhalib"
)

// Config describes what a decoder caches, with the names of the model's config.json
// in the comments.
type Config struct {
	Model  string // a name for tables
	Source string // where the numbers come from

	Layers       int // num_hidden_layers
	KVHeads      int // num_key_value_heads (num_attention_heads without GQA)
	HeadDim      int // head_dim of the keys
	ValueHeadDim int // head_dim of the values; 0: HeadDim

	// Sliding-window layers: LocalLayers of the Layers attend over at most Window positions
	// (Gemma 3: 5 of every 6 layers, sliding_window 1024).
	LocalLayers, Window int

	// MLA (DeepSeek-V2): when Latent > 0 every layer caches Latent + RopeDim numbers per token
	// (kv_lora_rank + qk_rope_head_dim) instead of keys and values.
	Latent, RopeDim int

	Context int          // positions cached (the context length)
	Batch   int          // sequences; 0 means 1
	DType   dtypes.DType // of the cache; InvalidDType means bfloat16 (2 bytes)
}

// PerTokenElements is the number of cached numbers per position in one global layer.
func (c Config) PerTokenElements() int64 {
	if c.Latent > 0 {
		return int64(c.Latent + c.RopeDim)
	}
	dv := c.ValueHeadDim
	if dv == 0 {
		dv = c.HeadDim
	}
	return int64(c.KVHeads) * int64(c.HeadDim+dv)
}

// Bytes returns the bytes of the KV cache described by c:
//
//	Batch · bytes(DType) · PerTokenElements · (global layers · Context + local layers · min(Context, Window))
//
// It returns an *mhalib.ArgumentError for negative or inconsistent fields.
func Bytes(c Config) (int64, error) {
	if c.Layers < 1 || c.Context < 0 || c.Batch < 0 || c.LocalLayers < 0 || c.LocalLayers > c.Layers ||
		(c.LocalLayers > 0 && c.Window < 1) || c.RopeDim < 0 || c.ValueHeadDim < 0 ||
		(c.Latent <= 0 && (c.KVHeads < 1 || c.HeadDim < 1)) {
		return 0, &mhalib.ArgumentError{Arg: "kvcatalog.Config", Msg: fmt.Sprintf("%+v: want Layers ≥ 1, KVHeads and HeadDim ≥ 1 (or Latent ≥ 1), "+
			"0 ≤ LocalLayers ≤ Layers with Window ≥ 1, no negative field", c)}
	}
	batch := int64(max(c.Batch, 1))
	size := int64(2)
	if c.DType != dtypes.InvalidDType {
		size = int64(c.DType.Size())
	}
	local := int64(min(c.Context, c.Window))
	positions := int64(c.Layers-c.LocalLayers)*int64(c.Context) + int64(c.LocalLayers)*local
	return batch * size * c.PerTokenElements() * positions, nil
}

// Published returns real models' cache layouts (context 0: set it), from their
// published configurations: Llama-3-8B with its 8 KV heads and as if it had 32 (MHA), Gemma 3
// 27B with its 5:1 local/global layers and as if all were global, SmolLM2-135M, and
// DeepSeek-V2-Lite with MLA and as the MHA its heads would need.
func Published() []Config {
	const llama = "meta-llama/Meta-Llama-3-8B config.json: num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, hidden_size 4096 (head_dim 128)"
	const gemma = "google/gemma-3-27b config: num_hidden_layers 62, num_attention_heads 32, num_key_value_heads 16, head_dim 128, sliding_window 1024, sliding_window_pattern 6 (every 6th layer global: 10 global, 52 local)"
	const smol = "HuggingFaceTB/SmolLM2-135M config.json: num_hidden_layers 30, num_attention_heads 9, num_key_value_heads 3, hidden_size 576 (head_dim 64)"
	const dsv2 = "deepseek-ai/DeepSeek-V2-Lite config.json: num_hidden_layers 27, num_attention_heads 16, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128"
	return []Config{
		{Model: "Llama-3-8B (GQA, 8 KV heads)", Source: llama, Layers: 32, KVHeads: 8, HeadDim: 128},
		{Model: "Llama-3-8B as MHA (32 KV heads)", Source: llama, Layers: 32, KVHeads: 32, HeadDim: 128},
		{Model: "Gemma-3-27B (52 local w1024 + 10 global)", Source: gemma, Layers: 62, KVHeads: 16, HeadDim: 128, LocalLayers: 52, Window: 1024},
		{Model: "Gemma-3-27B all global", Source: gemma, Layers: 62, KVHeads: 16, HeadDim: 128},
		{Model: "SmolLM2-135M (GQA, 3 KV heads)", Source: smol, Layers: 30, KVHeads: 3, HeadDim: 64},
		{Model: "DeepSeek-V2-Lite (MLA, 512+64)", Source: dsv2, Layers: 27, Latent: 512, RopeDim: 64},
		{Model: "DeepSeek-V2-Lite as MHA (16 heads)", Source: dsv2, Layers: 27, KVHeads: 16, HeadDim: 192, ValueHeadDim: 128},
	}
}
