package smollm2

import (
	"fmt"

	"github.com/mhalab/mhalab/models/gguf"
)

// Config holds a Llama model's hyper-parameters, read from the GGUF metadata (llama.*), with
// Hugging Face's field names.
type Config struct {
	NumHiddenLayers       int     // llama.block_count (30)
	HiddenSize            int     // llama.embedding_length (576)
	IntermediateSize      int     // llama.feed_forward_length (1536)
	NumAttentionHeads     int     // llama.attention.head_count (9)
	NumKeyValueHeads      int     // llama.attention.head_count_kv (3)
	HeadDim               int     // HiddenSize / NumAttentionHeads (64); llama.rope.dimension_count
	RopeTheta             float64 // llama.rope.freq_base (100000)
	RMSNormEps            float64 // llama.attention.layer_norm_rms_epsilon (1e-5)
	VocabSize             int     // rows of token_embd (49152)
	MaxPositionEmbeddings int     // llama.context_length (8192)
}

// ReadConfig reads the configuration of a "llama" GGUF file and checks that it is consistent.
func ReadConfig(f *gguf.File) (Config, error) {
	var c Config
	arch, err := f.String("general.architecture")
	if err != nil {
		return c, err
	}
	if arch != "llama" {
		return c, fmt.Errorf("smollm2: %s: architecture %q is not supported (llama is)", f.Name, arch)
	}
	ints := []struct {
		key string
		dst *int
	}{
		{"llama.block_count", &c.NumHiddenLayers},
		{"llama.embedding_length", &c.HiddenSize},
		{"llama.feed_forward_length", &c.IntermediateSize},
		{"llama.attention.head_count", &c.NumAttentionHeads},
		{"llama.attention.head_count_kv", &c.NumKeyValueHeads},
		{"llama.context_length", &c.MaxPositionEmbeddings},
	}
	for _, x := range ints {
		if *x.dst, err = f.Int(x.key); err != nil {
			return c, err
		}
		if *x.dst <= 0 || *x.dst > 1<<20 {
			return c, fmt.Errorf("smollm2: %s: %s = %d is out of range", f.Name, x.key, *x.dst)
		}
	}
	if c.RopeTheta, err = f.Float("llama.rope.freq_base"); err != nil {
		return c, err
	}
	if c.RMSNormEps, err = f.Float("llama.attention.layer_norm_rms_epsilon"); err != nil {
		return c, err
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 || c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return c, fmt.Errorf("smollm2: %s: %d heads do not divide embedding %d, or %d kv heads do not divide %d heads",
			f.Name, c.NumAttentionHeads, c.HiddenSize, c.NumKeyValueHeads, c.NumAttentionHeads)
	}
	c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	if c.HeadDim%2 != 0 {
		return c, fmt.Errorf("smollm2: %s: head size %d is odd (RoPE rotates pairs)", f.Name, c.HeadDim)
	}
	if rd, err := f.Int("llama.rope.dimension_count"); err == nil && rd != c.HeadDim {
		return c, fmt.Errorf("smollm2: %s: llama.rope.dimension_count %d differs from the head size %d (partial RoPE is not supported)", f.Name, rd, c.HeadDim)
	}
	emb, err := f.Tensor("token_embd.weight")
	if err != nil {
		return c, err
	}
	if len(emb.Dims) != 2 || int(emb.Dims[0]) != c.HiddenSize {
		return c, fmt.Errorf("smollm2: %s: token_embd.weight has dims %v, want [%d, vocab]", f.Name, emb.Dims, c.HiddenSize)
	}
	c.VocabSize = int(emb.Dims[1])
	return c, nil
}
