package smollm2

import (
	"fmt"

	"github.com/mhalab/mhalab/models/gguf"
)

// Model is SmolLM2 read from a GGUF file: its configuration, tokenizer, chat template and the
// weights dequantised to float32 (Weights).
type Model struct {
	Name      string // the file
	Config    Config
	Tokenizer *Tokenizer
	Weights   *Weights

	chatTemplate string
}

// Open reads the model in the GGUF file at path: configuration, tokenizer and weights.
func Open(path string) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return FromGGUF(f)
}

// FromGGUF reads the model from a parsed GGUF file.
func FromGGUF(f *gguf.File) (*Model, error) {
	cfg, err := ReadConfig(f)
	if err != nil {
		return nil, err
	}
	tok, err := NewTokenizer(f)
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() != cfg.VocabSize {
		return nil, fmt.Errorf("smollm2: %s: %d tokens in the vocabulary but %d rows in token_embd.weight", f.Name, tok.VocabSize(), cfg.VocabSize)
	}
	m := &Model{Name: f.Name, Config: cfg, Tokenizer: tok}
	m.chatTemplate, _ = f.String("tokenizer.chat_template")
	if m.Weights, err = ReadWeights(f, cfg); err != nil {
		return nil, err
	}
	return m, nil
}
