package live

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/explorer"
	"github.com/mhalab/mhalab/internal/textinput"
	"github.com/mhalab/mhalab/models/minilm"
)

// inductionPeriod is the length of the random sequence that is repeated to measure induction.
const inductionPeriod = 20

// encoder runs a BERT-family model (models/minilm).
type encoder struct {
	m         *minilm.Model
	backend   backends.Backend
	name      string
	reason    string
	maxTokens int
	induction [][]float64 // [layer][head], measured on the first Analyze
}

func openEncoder(dir, backendSpec string, maxTokens int, load func(string) (*minilm.Model, error)) (*encoder, error) {
	m, err := load(dir)
	if err != nil {
		return nil, err
	}
	b, reason, err := newBackend(backendSpec)
	if err != nil {
		return nil, err
	}
	return &encoder{m: m, backend: b, name: filepath.Base(filepath.Clean(dir)), reason: reason,
		maxTokens: min(maxTokens, m.Config.MaxPositionEmbeddings)}, nil
}

func (e *encoder) Info() Info {
	c := e.m.Config
	groups := make([][]int, c.NumAttentionHeads)
	for h := range groups {
		groups[h] = []int{h}
	}
	return Info{Name: e.name, Kind: KindEncoder, Backend: e.reason, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads,
		KVHeads: c.NumAttentionHeads, HeadDim: c.HiddenSize / c.NumAttentionHeads, Context: c.MaxPositionEmbeddings,
		MaxTokens: e.maxTokens, Groups: groups}
}

func (e *encoder) Close() { e.backend.Finalize() }

// encode checks and tokenises one sentence.
func (e *encoder) encode(what, text string) (minilm.Encoding, error) {
	if err := textinput.CheckUTF8(what, text); err != nil {
		return minilm.Encoding{}, err
	}
	// A WordPiece token holds at least one byte: refuse by length before tokenising megabytes.
	if len(text) > 200*e.maxTokens {
		return minilm.Encoding{}, fmt.Errorf("%s is %d bytes: the explorer shows at most %d tokens (--max-tokens; the model's context is %d)",
			what, len(text), e.maxTokens, e.m.Config.MaxPositionEmbeddings)
	}
	enc, err := e.m.Tokenizer.Encode(text)
	if errors.Is(err, minilm.ErrNoTokens) || (err == nil && enc.Len() <= 2) {
		return minilm.Encoding{}, fmt.Errorf("%s has no tokens", what)
	}
	if err != nil {
		return minilm.Encoding{}, fmt.Errorf("%s: %w", what, err)
	}
	if enc.Len() > e.maxTokens {
		return minilm.Encoding{}, tooLong(what, enc.Len(), e.maxTokens, e.m.Config.MaxPositionEmbeddings)
	}
	return enc, nil
}

func (e *encoder) Analyze(r Request) (*Result, error) {
	start := time.Now()
	if len(r.Ablate) > 0 {
		return nil, errAblation
	}
	enc, err := e.encode("the text", r.Text)
	if err != nil {
		return nil, err
	}
	var enc2 minilm.Encoding
	if r.Text2 != "" {
		if enc2, err = e.encode("the second sentence", r.Text2); err != nil {
			return nil, err
		}
	}
	if err := e.measureInduction(); err != nil {
		return nil, err
	}
	pad := bucket(enc.Len(), e.maxTokens)
	att, emb, err := e.m.AttentionPadded(e.backend, enc, pad)
	if err != nil {
		return nil, err
	}
	res := &Result{Tokens: enc.Tokens, IDs: enc.IDs, Attention: att, Bucket: pad}
	if res.Summaries, err = summaries(att, enc.Tokens, e.induction); err != nil {
		return nil, err
	}
	if r.Text2 != "" {
		out, err := e.m.RunPadded(e.backend, []minilm.Encoding{enc2}, bucket(enc2.Len(), e.maxTokens), false)
		if err != nil {
			return nil, err
		}
		res.Similarity = &Similarity{Cosine: minilm.Cosine(emb, out.Embeddings[0])}
	}
	res.Millis = ms(time.Since(start))
	return res, nil
}

func (e *encoder) Step(Request) (*Result, error) {
	return nil, errors.New("generation needs a decoder (a Llama-family GGUF file); this is an encoder")
}

// measureInduction runs [CLS] r r [SEP] (r: inductionPeriod random ids, explorer.InductionTokens)
// once and keeps every head's induction score.
func (e *encoder) measureInduction() error {
	if e.induction != nil {
		return nil
	}
	ref, err := e.m.Tokenizer.Encode("a")
	if err != nil {
		return err
	}
	cls, sep := ref.IDs[0], ref.IDs[len(ref.IDs)-1]
	period := min(inductionPeriod, (e.maxTokens-2)/2)
	ids := append(append([]int{cls}, explorer.InductionTokens(period, 2000, e.m.Config.VocabSize)...), sep)
	enc := minilm.Encoding{IDs: ids, Tokens: make([]string, len(ids))}
	att, _, err := e.m.AttentionPadded(e.backend, enc, bucket(len(ids), e.maxTokens))
	if err != nil {
		return err
	}
	e.induction, err = explorer.InductionScores(att, 1, period)
	return err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// errAblation is returned while the models have no head ablation in this build.
var errAblation = errors.New("switching heads off is not available in this build")
