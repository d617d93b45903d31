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
	"github.com/mhalab/mhalab/models/probe"
	"github.com/mhalab/mhalab/xla"
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
		MaxTokens: e.maxTokens, Groups: groups, Ablation: true}
}

func (e *encoder) Close() { xla.Close(e.backend) } // after the buffer cleanups due (xla/close.go)

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
	enc, err := e.encode("the text", r.Text)
	if err != nil {
		return nil, err
	}
	encs := []minilm.Encoding{enc}
	if r.Text2 != "" {
		enc2, err := e.encode("the second sentence", r.Text2)
		if err != nil {
			return nil, err
		}
		encs = append(encs, enc2)
	}
	if err := e.measureInduction(); err != nil {
		return nil, err
	}
	ab := ablation(r.Ablate)
	cut, pad, err := e.probe(encs, ab, true)
	if err != nil {
		return nil, err
	}
	att := traceWeights(cut.Trace, 0, enc.Len())
	res := &Result{Tokens: enc.Tokens, IDs: enc.IDs, Attention: att, Bucket: pad}
	if res.Summaries, err = summaries(att, enc.Tokens, e.induction); err != nil {
		return nil, err
	}
	sim := &Similarity{}
	if len(encs) == 2 {
		sim.Cosine = ptr(minilm.Cosine(cut.Embeddings[0], cut.Embeddings[1]))
	}
	if len(ab.Heads) > 0 {
		plain, _, err := e.probe(encs, probe.Ablation{}, false)
		if err != nil {
			return nil, err
		}
		sim.SelfIntact = ptr(minilm.Cosine(cut.Embeddings[0], plain.Embeddings[0]))
		if len(encs) == 2 {
			sim.Intact = ptr(minilm.Cosine(plain.Embeddings[0], plain.Embeddings[1]))
		}
	}
	if sim.Cosine != nil || sim.SelfIntact != nil {
		res.Similarity = sim
	}
	res.Millis = ms(time.Since(start))
	return res, nil
}

// probe runs the encoder on encs padded to the bucket of the longest, with ab's heads off.
func (e *encoder) probe(encs []minilm.Encoding, ab probe.Ablation, trace bool) (*minilm.ProbeOutput, int, error) {
	L := 0
	for _, enc := range encs {
		L = max(L, enc.Len())
	}
	pad := bucket(L, e.maxTokens)
	out, err := e.m.Probe(e.backend, encs, minilm.ProbeOptions{Ablation: ab, Trace: trace, PadTo: pad})
	return out, pad, err
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
	out, _, err := e.probe([]minilm.Encoding{enc}, probe.Ablation{}, true)
	if err != nil {
		return err
	}
	e.induction, err = explorer.InductionScores(traceWeights(out.Trace, 0, len(ids)), 1, period)
	return err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ptr(x float64) *float64 { return &x }

// ablation is the zero-ablation of heads (probe.Zero: the head's output z_h := 0).
func ablation(heads []Head) probe.Ablation {
	if len(heads) == 0 {
		return probe.Ablation{}
	}
	a := probe.Ablation{Mode: probe.Zero}
	for _, h := range heads {
		a.Heads = append(a.Heads, probe.Head{Layer: h.Layer, Head: h.Head})
	}
	return a
}

// traceWeights cuts sequence b's first n positions out of a trace's attention [B, H, P, P] per
// layer: [layer][head][n][n].
func traceWeights(tr probe.Trace, b, n int) [][][][]float32 {
	att := make([][][][]float32, len(tr.Attention))
	for l, a := range tr.Attention {
		H := a.Shape[1]
		att[l] = make([][][]float32, H)
		for h := range H {
			att[l][h] = make([][]float32, n)
			for q := range n {
				att[l][h][q] = a.Row(b, h, q)[:n:n]
			}
		}
	}
	return att
}
