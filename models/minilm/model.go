package minilm

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/mhalab/mhalab/torchio"
)

// DefaultMaxTokens is sentence-transformers' max_seq_length for this model: longer input is
// truncated to it (Model.Encode). The model's own limit is Config.MaxPositionEmbeddings (512).
const DefaultMaxTokens = 256

// ErrNoTokens is returned by Model.Encode for a sentence with nothing to embed: empty,
// whitespace only, or only characters the tokenizer drops.
var ErrNoTokens = errors.New("nothing to embed")

// Model is all-MiniLM-L6-v2 loaded from its folder: configuration, tokenizer and weights (in a
// GoMLX context, one variable per checkpoint tensor). A Model is not safe for concurrent use.
type Model struct {
	Config    Config
	Tokenizer *Tokenizer
	Dir       string

	weights map[string]*tensors.Tensor            // the checkpoint, on the host
	ctxs    map[backends.Backend]*context.Context // the variables, one context per backend
	execs   map[execKey]*context.Exec
	probes  map[probeKey]*context.Exec // Probe's programs (probe.go)
}

type execKey struct {
	backend backends.Backend
	details bool
}

// Load reads the model from dir (DefaultDir() for the setup step's copy): it checks the pinned
// files (missing, truncated or wrong sha256 → an error naming the file and the fix), reads
// config.json and tokenizer.json, and loads model.safetensors into variables.
func Load(dir string) (*Model, error) {
	if err := CheckFiles(dir); err != nil {
		return nil, err
	}
	return LoadFolder(dir)
}

// LoadFolder reads a BERT-family model from dir without checking the pinned files: config.json
// (BERT's fields; GELU, absolute positions), tokenizer.json (WordPiece) and model.safetensors
// with BERT's tensor names. A file that does not fit is one error naming it and why.
func LoadFolder(dir string) (*Model, error) {
	cfg, err := ReadConfig(filepath.Join(dir, FileConfig().Name))
	if err != nil {
		return nil, err
	}
	tk, err := LoadTokenizer(filepath.Join(dir, FileTokenizer().Name))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, FileWeights().Name)
	f, err := torchio.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("minilm: %w", err)
	}
	m := &Model{Config: cfg, Tokenizer: tk, Dir: dir, weights: f.Tensors,
		ctxs: map[backends.Backend]*context.Context{}, execs: map[execKey]*context.Exec{}}
	// Check the checkpoint now, so that a bad file fails Load rather than the first Run.
	if err := loadWeights(context.New(), cfg, m.weights, path); err != nil {
		return nil, err
	}
	return m, nil
}

// Context returns the context holding the weights for backend (one variable per checkpoint
// tensor, under the checkpoint's names; see weights.go). GoMLX binds a variable's value to
// one backend, so each backend gets its own copy of the weights.
func (m *Model) Context(backend backends.Backend) (*context.Context, error) {
	if ctx, ok := m.ctxs[backend]; ok {
		return ctx, nil
	}
	copies := make(map[string]*tensors.Tensor, len(m.weights))
	for name, t := range m.weights {
		c, err := t.LocalClone()
		if err != nil {
			return nil, fmt.Errorf("minilm: copying %s: %w", name, err)
		}
		copies[name] = c
	}
	ctx := context.New()
	if err := loadWeights(ctx, m.Config, copies, filepath.Join(m.Dir, FileWeights().Name)); err != nil {
		return nil, err
	}
	m.ctxs[backend] = ctx
	return ctx, nil
}

// Encode tokenises the sentences and truncates each to maxTokens tokens ([CLS] and [SEP]
// included; maxTokens ≤ 0 means DefaultMaxTokens). dropped[i] is how many tokens sentence i
// lost. A sentence with no tokens (empty, whitespace only) or invalid UTF-8 is an error naming
// its index; maxTokens above the model's positions is an error.
func (m *Model) Encode(sentences []string, maxTokens int) (encs []Encoding, dropped []int, err error) {
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	if maxTokens > m.Config.MaxPositionEmbeddings {
		return nil, nil, fmt.Errorf("minilm: max tokens %d is above the model's %d positions", maxTokens, m.Config.MaxPositionEmbeddings)
	}
	for i, s := range sentences {
		enc, err := m.Tokenizer.Encode(s)
		if err != nil {
			return nil, nil, fmt.Errorf("sentence %d: %w", i+1, err)
		}
		if enc.Len() <= 2 {
			what := fmt.Sprintf("(%q) has no tokens once normalised", s)
			if strings.TrimSpace(s) == "" {
				what = "is empty or whitespace only"
			}
			return nil, nil, fmt.Errorf("sentence %d %s: %w", i+1, what, ErrNoTokens)
		}
		enc, n := m.Tokenizer.Truncate(enc, maxTokens)
		encs = append(encs, enc)
		dropped = append(dropped, n)
	}
	return encs, dropped, nil
}

// Output is what Run returns for one padded batch of B sentences, L = the longest.
type Output struct {
	// Embeddings are the sentence embeddings, [B][E]: mean of the last hidden state over the
	// sentence's tokens ([CLS] and [SEP] included, padding excluded), L2-normalised.
	Embeddings [][]float32
	// Hidden holds the embeddings' output then every layer's output, each [B, L, E] (only with
	// details). Padded positions hold values that nothing uses.
	Hidden []*tensors.Tensor
	// Attentions holds every layer's attention weights [B, h, L, L] (only with details).
	// Padded keys get weight 0.
	Attentions []*tensors.Tensor
}

// Run runs the encoder on one batch, padded with [PAD] to the longest encoding; padded keys are
// masked in every layer, so each sentence gets what it gets alone. With details it also returns
// the hidden states and attention weights.
func (m *Model) Run(backend backends.Backend, encs []Encoding, details bool) (*Output, error) {
	if backend == nil {
		return nil, errors.New("minilm: Run: backend is nil")
	}
	if len(encs) == 0 {
		return nil, errors.New("minilm: Run: no sentences")
	}
	ids, valid, err := m.pad(encs, 0) // [B, L] ×2
	if err != nil {
		return nil, err
	}
	exec, err := m.exec(backend, details)
	if err != nil {
		return nil, err
	}
	results, err := exec.Exec(ids, valid)
	if err != nil {
		return nil, fmt.Errorf("minilm: %w", err)
	}
	B := len(encs)
	out := &Output{}
	emb, err := tensors.CopyFlatData[float32](results[0]) // [B, E]
	if err != nil {
		return nil, err
	}
	results[0].FinalizeAll()
	E := m.Config.HiddenSize
	for b := range B {
		out.Embeddings = append(out.Embeddings, emb[b*E:(b+1)*E])
	}
	if details {
		n := m.Config.NumHiddenLayers
		out.Hidden = results[1 : 2+n]
		out.Attentions = results[2+n:]
	}
	return out, nil
}

// pad makes the inputs of one batch: ids [B, L] int32 padded with [PAD] to the longest
// encoding (or to padTo, at most the model's positions, when that is longer), and valid [B, L]
// bool (false on padding).
func (m *Model) pad(encs []Encoding, padTo int) (ids, valid *tensors.Tensor, err error) {
	B, L := len(encs), 0
	for i, e := range encs {
		if e.Len() > m.Config.MaxPositionEmbeddings {
			return nil, nil, fmt.Errorf("minilm: sentence %d has %d tokens, above the model's %d positions", i+1, e.Len(), m.Config.MaxPositionEmbeddings)
		}
		L = max(L, e.Len())
	}
	L = max(L, min(padTo, m.Config.MaxPositionEmbeddings))
	id := make([]int32, B*L) // [B, L], [PAD] = pad_token_id
	ok := make([]bool, B*L)  // [B, L]
	for b, e := range encs {
		for i := range L {
			id[b*L+i] = int32(m.Config.PadTokenID)
		}
		for i, x := range e.IDs {
			if x < 0 || x >= m.Config.VocabSize {
				return nil, nil, fmt.Errorf("minilm: sentence %d: token id %d outside the vocabulary [0, %d)", b+1, x, m.Config.VocabSize)
			}
			id[b*L+i] = int32(x)
			ok[b*L+i] = true
		}
	}
	return tensors.FromFlatDataAndDimensions(id, B, L), tensors.FromFlatDataAndDimensions(ok, B, L), nil
}

// exec returns the compiled program for the backend: (ids [B, L] int32, valid [B, L] bool) →
// embeddings [B, E] (then, with details, hidden states and attention weights). GoMLX compiles
// one graph per (B, L).
func (m *Model) exec(backend backends.Backend, details bool) (*context.Exec, error) {
	key := execKey{backend, details}
	if e, ok := m.execs[key]; ok {
		return e, nil
	}
	ctx, err := m.Context(backend)
	if err != nil {
		return nil, err
	}
	c := m.Config
	e, err := context.NewExec(backend, ctx, func(ctx *context.Context, inputs []*Node) []*Node {
		ids, valid := inputs[0], inputs[1]
		hidden, weights := encode(ctx, c, ids, valid, details, nil)
		emb := NormalizeL2(MeanPooling(hidden[len(hidden)-1], valid)) // [B, E]
		if !details {
			return []*Node{emb}
		}
		return append(append([]*Node{emb}, hidden...), weights...)
	})
	if err != nil {
		return nil, fmt.Errorf("minilm: %w", err)
	}
	e.SetMaxCache(64)
	m.execs[key] = e
	return e, nil
}

// Embed returns the sentence embeddings [N][E] of already encoded sentences, in input order.
// Like sentence-transformers it sorts them by length first, so that each batch of batchSize
// (≤ 0: 32) is padded to a length close to its sentences'.
func (m *Model) Embed(backend backends.Backend, encs []Encoding, batchSize int) ([][]float32, error) {
	if batchSize <= 0 {
		batchSize = 32
	}
	order := make([]int, len(encs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return encs[b].Len() - encs[a].Len() })
	all := make([][]float32, len(encs))
	for start := 0; start < len(order); start += batchSize {
		idx := order[start:min(start+batchSize, len(order))]
		batch := make([]Encoding, len(idx))
		for j, i := range idx {
			batch[j] = encs[i]
		}
		out, err := m.Run(backend, batch, false)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			all[i] = out.Embeddings[j]
		}
	}
	return all, nil
}

// Attention returns the attention weights of every layer and head for one encoded sentence:
// [layer][head][query][key], each row summing to 1.
func (m *Model) Attention(backend backends.Backend, enc Encoding) ([][][][]float32, error) {
	out, err := m.Run(backend, []Encoding{enc}, true)
	if err != nil {
		return nil, err
	}
	defer out.Finalize()
	h, L := m.Config.NumAttentionHeads, enc.Len()
	att := make([][][][]float32, len(out.Attentions))
	for l, t := range out.Attentions {
		flat, err := tensors.CopyFlatData[float32](t) // [1, h, L, L]
		if err != nil {
			return nil, err
		}
		att[l] = make([][][]float32, h)
		for hd := range h {
			att[l][hd] = make([][]float32, L)
			for q := range L {
				off := (hd*L + q) * L
				att[l][hd][q] = flat[off : off+L]
			}
		}
	}
	return att, nil
}

// Finalize frees the output's tensors.
func (o *Output) Finalize() {
	for _, t := range o.Hidden {
		t.FinalizeAll()
	}
	for _, t := range o.Attentions {
		t.FinalizeAll()
	}
}

// Cosine is the cosine similarity of two vectors (their dot product when both are unit, as
// the embeddings are).
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}
