package live

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/explorer"
	"github.com/mhalab/mhalab/internal/textinput"
	"github.com/mhalab/mhalab/models/probe"
	"github.com/mhalab/mhalab/models/smollm2"
	"github.com/mhalab/mhalab/xla"
)

// decoder runs a Llama-family model (models/smollm2).
type decoder struct {
	m         *smollm2.Model
	backend   backends.Backend
	runner    *smollm2.Runner
	reason    string
	maxTokens int
	induction [][]float64 // [layer][head], measured on the first request
	gen       *generation // the generation being stepped through, nil before the first step
}

// generation is one sequence decoded token by token with a KV cache.
type generation struct {
	session  *smollm2.Session
	sampling smollm2.Sampling
	sampler  *smollm2.Sampler
	text     string
	prompt   int   // the prompt's tokens
	ids      []int // prompt + generated
	logits   []float32
	done     bool
}

func openDecoder(path, backendSpec string, maxTokens int) (*decoder, error) {
	m, err := smollm2.Open(path)
	if err != nil {
		return nil, err
	}
	b, reason, err := newBackend(backendSpec)
	if err != nil {
		return nil, err
	}
	r, err := m.NewRunner(b)
	if err != nil {
		xla.Close(b)
		return nil, err
	}
	return &decoder{m: m, backend: b, runner: r, reason: reason, maxTokens: min(maxTokens, m.Config.MaxPositionEmbeddings)}, nil
}

func (d *decoder) Info() Info {
	c := d.m.Config
	groups := make([][]int, c.NumKeyValueHeads)
	per := c.NumAttentionHeads / c.NumKeyValueHeads // query head h reads key/value head h / per
	for h := range c.NumAttentionHeads {
		groups[h/per] = append(groups[h/per], h)
	}
	return Info{Name: filepath.Base(d.m.Name), Kind: KindDecoder, Backend: d.reason, Layers: c.NumHiddenLayers,
		Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim, Context: c.MaxPositionEmbeddings,
		MaxTokens: d.maxTokens, Groups: groups, Ablation: true}
}

func (d *decoder) Close() {
	if d.gen != nil {
		d.gen.session.Finalize()
	}
	d.runner.Finalize()
	xla.Close(d.backend) // after the buffer cleanups due (xla/close.go)
}

// sampling turns the request's controls into smollm2.Sampling (TopP 0 means 1).
func sampling(r Request) (smollm2.Sampling, error) {
	s := smollm2.Sampling{Temperature: r.Temperature, TopK: r.TopK, TopP: r.TopP, Seed: r.Seed}
	if s.TopP == 0 {
		s.TopP = 1
	}
	if s.Temperature == 0 {
		s.Greedy = true
	}
	return s, s.Check()
}

// encode checks and tokenises the text.
func (d *decoder) encode(text string) ([]int, error) {
	if err := textinput.CheckUTF8("the text", text); err != nil {
		return nil, err
	}
	ctx := d.m.Config.MaxPositionEmbeddings
	if least := d.m.Tokenizer.MinTokens(text); least > d.maxTokens {
		return nil, fmt.Errorf("the text is %d bytes, at least %d tokens: the explorer shows at most %d (--max-tokens; the model's context is %d)",
			len(text), least, d.maxTokens, ctx)
	}
	ids := d.m.Tokenizer.Encode(text)
	if len(ids) == 0 {
		return nil, errors.New("the text has no tokens")
	}
	if len(ids) > d.maxTokens {
		return nil, tooLong("the text", len(ids), d.maxTokens, ctx)
	}
	return ids, nil
}

// labels are the tokens as text (a piece of a multi-byte character shows as U+FFFD).
func (d *decoder) labels(ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		s, err := d.m.Tokenizer.Decode([]int{id})
		if err != nil {
			s = d.m.Tokenizer.Token(id)
		}
		out[i] = strings.ToValidUTF8(s, "\uFFFD")
	}
	return out
}

// attention runs the model over ids padded to their bucket (the padding comes after every real
// token, so a causal model's weights and logits for them do not change) with ab's heads off,
// and returns the logits after the last real token [V] and the weights [layer][head][n][n].
func (d *decoder) attention(ids []int, ab probe.Ablation) ([]float32, [][][][]float32, int, error) {
	n := len(ids)
	pad := bucket(n, d.maxTokens)
	padded := append(append(make([]int, 0, pad), ids...), make([]int, pad-n)...) // id 0 after the text
	out, err := d.runner.Probe([][]int{padded}, smollm2.ProbeOptions{Ablation: ab, Trace: true, Logits: true})
	if err != nil {
		return nil, nil, 0, err
	}
	return out.Logits.Row(0, n-1), traceWeights(out.Trace, 0, n), pad, nil
}

// result is the page's view of ids with ab's heads off: tokens, attention, summaries and the
// distribution of the token after them — from logits when given (the KV cache's), else from
// this run's. It also returns the logits it used.
func (d *decoder) result(ids []int, ab probe.Ablation, s smollm2.Sampling, bars int, logits []float32) (*Result, []float32, error) {
	last, att, pad, err := d.attention(ids, ab)
	if err != nil {
		return nil, nil, err
	}
	if logits == nil {
		logits = last
	}
	res := &Result{Tokens: d.labels(ids), IDs: ids, Attention: att, Bucket: pad}
	if res.Summaries, err = summaries(att, res.Tokens, d.induction); err != nil {
		return nil, nil, err
	}
	shown := s
	if s.Greedy { // greedy keeps one token: show the model's own distribution, softmax(logits)
		shown = smollm2.Sampling{Temperature: 1, TopP: 1}
	}
	kept, probs := shown.Distribution(logits)
	res.Kept = len(kept)
	if bars <= 0 {
		bars = 10
	}
	bars = min(bars, 50, len(kept))
	labels := d.labels(kept[:bars])
	for i := range bars {
		res.Next = append(res.Next, TokenProb{ID: kept[i], Token: labels[i], P: probs[i]})
	}
	return res, logits, nil
}

func (d *decoder) Analyze(r Request) (*Result, error) {
	start := time.Now()
	s, err := sampling(r)
	if err != nil {
		return nil, err
	}
	if err := d.measureInduction(); err != nil {
		return nil, err
	}
	ab := ablation(r.Ablate)
	if g := d.gen; r.Generation && g != nil && g.text == r.Text {
		var cached []float32 // the cache's logits when every head is on
		if len(ab.Heads) == 0 {
			cached = g.logits
		}
		res, _, err := d.result(g.ids, ab, s, r.Bars, cached)
		if err != nil {
			return nil, err
		}
		res.Generated, res.Done, res.Cache = append([]int{}, g.ids[g.prompt:]...), g.done, d.cache(g)
		res.Millis = ms(time.Since(start))
		return res, nil
	}
	ids, err := d.encode(r.Text)
	if err != nil {
		return nil, err
	}
	res, _, err := d.result(ids, ab, s, r.Bars, nil)
	if err != nil {
		return nil, err
	}
	res.Millis = ms(time.Since(start))
	return res, nil
}

// Step generates one token: with r.Reset, or when r.Text is not the current generation's
// text, it first starts a new generation (the prompt fed to the KV cache in power-of-two
// pieces). A change of the sampling controls takes effect from this token on (a new sampler,
// seeded with r.Seed). With heads switched off, the logits come from a run of the whole
// sequence with those heads off (the cached path runs every head); the cache still grows.
func (d *decoder) Step(r Request) (*Result, error) {
	start := time.Now()
	s, err := sampling(r)
	if err != nil {
		return nil, err
	}
	if err := d.measureInduction(); err != nil {
		return nil, err
	}
	ab := ablation(r.Ablate)
	g := d.gen
	if r.Reset || g == nil || g.text != r.Text {
		if g, err = d.start(r.Text, s); err != nil {
			return nil, err
		}
	}
	if g.sampling != s {
		g.sampling, g.sampler = s, smollm2.NewSampler(s)
	}
	if !g.done {
		next := g.logits
		if len(ab.Heads) > 0 {
			if next, _, _, err = d.attention(g.ids, ab); err != nil {
				return nil, err
			}
		}
		id := g.sampler.Next(next)
		switch {
		case id == d.m.Tokenizer.EOS:
			g.done = true
		case len(g.ids) >= g.session.Cap():
			g.done = true
		default:
			g.ids = append(g.ids, id)
			if len(g.ids) < g.session.Cap() {
				if g.logits, err = g.session.Feed([]int{id}); err != nil {
					d.dropGeneration()
					return nil, err
				}
			} else {
				g.done = true
			}
		}
	}
	var cached []float32
	if len(ab.Heads) == 0 {
		cached = g.logits
	}
	res, _, err := d.result(g.ids, ab, s, r.Bars, cached)
	if err != nil {
		return nil, err
	}
	res.Generated = append([]int{}, g.ids[g.prompt:]...)
	res.Done = g.done
	res.Cache = d.cache(g)
	res.Millis = ms(time.Since(start))
	return res, nil
}

// start begins a generation of text: a session holding maxTokens positions (made once, then
// reset), the prompt fed in power-of-two pieces.
func (d *decoder) start(text string, s smollm2.Sampling) (*generation, error) {
	ids, err := d.encode(text)
	if err != nil {
		return nil, err
	}
	if d.gen == nil {
		sess, err := d.runner.NewSession(d.maxTokens)
		if err != nil {
			return nil, err
		}
		d.gen = &generation{session: sess}
	}
	g := d.gen
	g.session.Reset()
	*g = generation{session: g.session, sampling: s, sampler: smollm2.NewSampler(s), text: text, prompt: len(ids), ids: ids}
	at := 0
	for _, n := range chunks(len(ids)) {
		if g.logits, err = g.session.Feed(ids[at : at+n]); err != nil {
			d.dropGeneration()
			return nil, err
		}
		at += n
	}
	g.done = len(ids) >= g.session.Cap()
	return g, nil
}

// dropGeneration frees a session that failed (its cache is in an unknown state).
func (d *decoder) dropGeneration() {
	if d.gen != nil {
		d.gen.session.Finalize()
		d.gen = nil
	}
}

// cache describes g's KV cache.
func (d *decoder) cache(g *generation) *Cache {
	c := d.m.Config
	perPos := int64(2 * c.HeadDim * 4) // keys and values, float32
	n := int64(g.session.Len())
	return &Cache{Positions: g.session.Len(), Capacity: g.session.Cap(),
		BytesPerLayer: n * int64(c.NumKeyValueHeads) * perPos, MHABytesPerLayer: n * int64(c.NumAttentionHeads) * perPos,
		AllocatedBytes: g.session.CacheBytes()}
}

// measureInduction runs r r (r: inductionPeriod random ids, explorer.InductionTokens) once and
// keeps every head's induction score.
func (d *decoder) measureInduction() error {
	if d.induction != nil {
		return nil
	}
	period := min(inductionPeriod, d.maxTokens/2)
	ids := explorer.InductionTokens(period, 1000, d.m.Config.VocabSize)
	_, att, _, err := d.attention(ids, probe.Ablation{})
	if err != nil {
		return err
	}
	d.induction, err = explorer.InductionScores(att, 0, period)
	return err
}
