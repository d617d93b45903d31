package minilm

import (
	"encoding/json"
	"fmt"
	"os"
)

// Config is the model's config.json, with BERT's published field names.
type Config struct {
	VocabSize             int     `json:"vocab_size"`              // 30522
	HiddenSize            int     `json:"hidden_size"`             // 384, the model width E
	NumHiddenLayers       int     `json:"num_hidden_layers"`       // 6
	NumAttentionHeads     int     `json:"num_attention_heads"`     // 12
	IntermediateSize      int     `json:"intermediate_size"`       // 1536, the FFN width
	HiddenAct             string  `json:"hidden_act"`              // "gelu" (exact, erf)
	MaxPositionEmbeddings int     `json:"max_position_embeddings"` // 512
	TypeVocabSize         int     `json:"type_vocab_size"`         // 2
	LayerNormEps          float64 `json:"layer_norm_eps"`          // 1e-12
	PadTokenID            int     `json:"pad_token_id"`            // 0
	PositionEmbeddingType string  `json:"position_embedding_type"` // "absolute"
}

// ReadConfig reads and checks config.json.
func ReadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("minilm: config %s: %w", path, err)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("minilm: config %s: %w", path, err)
	}
	if err := c.check(); err != nil {
		return Config{}, fmt.Errorf("minilm: config %s: %w", path, err)
	}
	return c, nil
}

func (c Config) check() error {
	switch {
	case c.HiddenSize <= 0 || c.NumAttentionHeads <= 0 || c.HiddenSize%c.NumAttentionHeads != 0:
		return fmt.Errorf("hidden_size %d is not a positive multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	case c.NumHiddenLayers <= 0 || c.IntermediateSize <= 0 || c.VocabSize <= 0 || c.MaxPositionEmbeddings <= 0 || c.TypeVocabSize <= 0:
		return fmt.Errorf("sizes must be positive (layers %d, intermediate %d, vocab %d, positions %d, types %d)",
			c.NumHiddenLayers, c.IntermediateSize, c.VocabSize, c.MaxPositionEmbeddings, c.TypeVocabSize)
	case c.HiddenAct != "gelu":
		return fmt.Errorf("hidden_act %q: only \"gelu\" (exact) is implemented", c.HiddenAct)
	case c.PositionEmbeddingType != "" && c.PositionEmbeddingType != "absolute":
		return fmt.Errorf("position_embedding_type %q: only \"absolute\" is implemented", c.PositionEmbeddingType)
	case c.LayerNormEps <= 0:
		return fmt.Errorf("layer_norm_eps %g must be positive", c.LayerNormEps)
	}
	return nil
}
