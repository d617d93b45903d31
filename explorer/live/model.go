package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/models/minilm"
	"github.com/mhalab/mhalab/models/smollm2"
	"github.com/mhalab/mhalab/xla"
)

// Model is what the server runs: an encoder or a decoder loaded by Open. Its methods are called
// one at a time (the server holds a lock).
type Model interface {
	Info() Info
	// Analyze runs the model on r.Text: tokens, attention, summaries and, for a decoder, the
	// next-token distribution; for an encoder with r.Text2, the sentences' similarity.
	Analyze(r Request) (*Result, error)
	// Step generates one token (a decoder; an encoder returns an error).
	Step(r Request) (*Result, error)
	// Close frees the backend and the compiled programs.
	Close()
}

// DefaultMaxTokens is the most tokens the explorer shows by default: 30 layers × 9 heads of
// 128 × 128 weights are 4.4 million numbers per update.
const DefaultMaxTokens = 128

// The short names Open accepts for the models scripts/setup.sh installs.
const (
	NameMiniLM  = "minilm"
	NameSmolLM2 = "smollm2"
)

// Open loads the model at path — a folder with config.json, tokenizer.json and
// model.safetensors (BERT family), a GGUF file (Llama family: Q4_1, Q8_0, F16 or F32
// tensors), or "minilm" / "smollm2" (or "") for the models scripts/setup.sh installs ("" is
// MiniLM) — and opens the backend (spec as xla.NewWithReason; "" = the default). maxTokens ≤ 0
// means DefaultMaxTokens; it is capped at the model's context. A model the explorer cannot
// run is one error line saying why.
func Open(path, backendSpec string, maxTokens int) (Model, error) {
	if err := xla.CheckSpec(backendSpec); err != nil {
		return nil, err
	}
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	if maxTokens < 4 {
		return nil, fmt.Errorf("max tokens %d: want ≥ 4", maxTokens)
	}
	switch path {
	case "", NameMiniLM:
		dir, err := minilm.DefaultDir()
		if err != nil {
			return nil, err
		}
		return openEncoder(dir, backendSpec, maxTokens, minilm.Load)
	case NameSmolLM2:
		p, err := smollm2.CheckDefault()
		if err != nil {
			return nil, err
		}
		return openDecoder(p, backendSpec, maxTokens)
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: no such file or folder (want a GGUF file, a BERT model folder, %q or %q)", path, NameMiniLM, NameSmolLM2)
	case err != nil:
		return nil, err
	case st.IsDir():
		if err := checkBERTFolder(path); err != nil {
			return nil, err
		}
		return openEncoder(path, backendSpec, maxTokens, minilm.LoadFolder)
	}
	if err := checkGGUF(path); err != nil {
		return nil, err
	}
	return openDecoder(path, backendSpec, maxTokens)
}

// checkBERTFolder refuses a folder that is not a BERT-family model before its weights are read.
func checkBERTFolder(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return fmt.Errorf("%s: not a model folder: no config.json (want a BERT folder with config.json, tokenizer.json and model.safetensors)", dir)
	}
	var c struct {
		ModelType string `json:"model_type"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	if c.ModelType != "" && c.ModelType != "bert" {
		return fmt.Errorf("%s: model_type %q: the explorer runs BERT-family folders (model_type \"bert\") and Llama-family GGUF files", dir, c.ModelType)
	}
	return nil
}

// checkGGUF refuses a file that does not start with GGUF's magic.
func checkGGUF(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "GGUF" {
		return fmt.Errorf("%s: not a GGUF file (it does not start with \"GGUF\"): the explorer runs Llama-family GGUF files and BERT model folders", path)
	}
	return nil
}

// newBackend opens the backend, saying which and why.
func newBackend(spec string) (backends.Backend, string, error) {
	return xla.NewWithReason(spec)
}

// tooLong is the error for text over the explorer's limit.
func tooLong(what string, n, limit, context int) error {
	return fmt.Errorf("%s is %d tokens: the explorer shows at most %d (--max-tokens; the model's context is %d)", what, n, limit, context)
}
