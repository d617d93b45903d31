package live

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/commands/attention"
	"github.com/mhalab/mhalab/internal/commands/generate"
	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/models/minilm"
	"github.com/mhalab/mhalab/models/smollm2"
	"github.com/mhalab/mhalab/xla"
)

// testBackend is the backend the model tests run on: xla:cpu when its plugin loads, else go.
func testBackend() string {
	if b, err := xla.New("xla:cpu"); err == nil {
		b.Finalize()
		return "xla:cpu"
	}
	return "go"
}

// need skips (or, under CI, fails) when err says a model is not installed.
func need(t *testing.T, name string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	testenv.RequireOrSkip(t, fmt.Sprintf("%s not installed (scripts/setup.sh --only %s): %v", name, name, err))
}

var (
	models   = map[string]Model{}
	modelsMu sync.Mutex
)

// openModel opens a model once per test binary (SmolLM2 takes seconds to dequantise).
func openModel(t *testing.T, name string) Model {
	t.Helper()
	switch name {
	case NameMiniLM:
		dir, err := minilm.DefaultDir()
		if err == nil {
			err = minilm.CheckFiles(dir)
		}
		need(t, name, err)
	case NameSmolLM2:
		_, err := smollm2.CheckDefault()
		need(t, name, err)
	}
	modelsMu.Lock()
	defer modelsMu.Unlock()
	if m, ok := models[name]; ok {
		return m
	}
	m, err := Open(name, testBackend(), 64)
	if err != nil {
		t.Fatal(err)
	}
	models[name] = m
	return m
}

// decodeWeights reads Weights' JSON back: [layers·heads·L·L].
func decodeWeights(t *testing.T, raw json.RawMessage) (layers, heads, L int, w []float32) {
	t.Helper()
	var a struct {
		Layers, Heads, Len int
		Data               string
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(a.Data)
	if err != nil {
		t.Fatal(err)
	}
	w = make([]float32, len(b)/2)
	for i := range w {
		w[i] = float32(binary.LittleEndian.Uint16(b[2*i:])) / 65535
	}
	return a.Layers, a.Heads, a.Len, w
}

const sentence = "The cat sat on the mat because it was tired."

// attentionJSON writes `mhalab attention --json` of sentence to out.
func attentionJSON(out io.Writer) error {
	var o attention.Options
	o.Backend, o.JSON, o.Sentences = testBackend(), true, []string{sentence}
	return o.Run(context.Background(), cli.IO{Out: out, Err: io.Discard})
}

// greedyGenerate writes `mhalab generate --json --greedy --max-new-tokens n` of prompt to out.
func greedyGenerate(prompt string, n int, out io.Writer) error {
	var o generate.Options
	o.Backend, o.MaxNewTokens, o.JSON, o.Prompt = testBackend(), n, true, []string{prompt}
	return o.Run(context.Background(), cli.IO{Out: out, Err: io.Discard})
}

// TestMiniLMMatchesAttentionCommand: the explorer's tokens and weights (padded to a bucket,
// sent as uint16) equal `mhalab attention --json` on the same sentence within 2e-5.
func TestMiniLMMatchesAttentionCommand(t *testing.T) {
	m := openModel(t, NameMiniLM)
	var out bytes.Buffer
	if err := attentionJSON(&out); err != nil {
		t.Fatal(err)
	}
	var want struct {
		Tokens     []string
		IDs        []int
		Attentions [][][][]float32
	}
	if err := json.Unmarshal(out.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	res, err := m.Analyze(Request{Text: sentence, Text2: "A kitten rested on the rug."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bucket != 16 || len(res.Tokens) != 13 {
		t.Errorf("%d tokens padded to %d: want 13 padded to 16", len(res.Tokens), res.Bucket)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tokens     []string
		IDs        []int
		Attention  json.RawMessage
		Summaries  []Summary
		Similarity *Similarity
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Tokens, " ") != strings.Join(want.Tokens, " ") || len(got.IDs) != len(want.IDs) {
		t.Fatalf("tokens %q, want %q", got.Tokens, want.Tokens)
	}
	layers, heads, L, w := decodeWeights(t, got.Attention)
	if layers != len(want.Attentions) || heads != len(want.Attentions[0]) || L != len(want.Tokens) {
		t.Fatalf("weights %d×%d×%d, want %d×%d×%d", layers, heads, L, len(want.Attentions), len(want.Attentions[0]), len(want.Tokens))
	}
	worst := 0.0
	for l := range layers {
		for h := range heads {
			for q := range L {
				for k := range L {
					worst = max(worst, math.Abs(float64(w[((l*heads+h)*L+q)*L+k]-want.Attentions[l][h][q][k])))
				}
			}
		}
	}
	if worst > 2e-5 {
		t.Errorf("max |explorer − attention --json| = %.2g, want ≤ 2e-5", worst)
	}
	if len(got.Summaries) != layers*heads || got.Similarity == nil || got.Similarity.Cosine == nil ||
		!(*got.Similarity.Cosine > 0.3 && *got.Similarity.Cosine < 1) || got.Similarity.Intact != nil {
		t.Fatalf("%d summaries, similarity %+v", len(got.Summaries), got.Similarity)
	}
	t.Logf("max difference %.2g; cosine(%q, kitten) = %.4f; %.1f ms", worst, sentence, *got.Similarity.Cosine, res.Millis)

	// Switching heads off changes the similarity; the intact one is the one above.
	cut, err := m.Analyze(Request{Text: sentence, Text2: "A kitten rested on the rug.", Ablate: []Head{{0, 0}, {0, 1}, {1, 3}, {2, 5}, {5, 11}}})
	if err != nil {
		t.Fatal(err)
	}
	s := cut.Similarity
	if s == nil || s.Intact == nil || s.SelfIntact == nil || math.Abs(*s.Intact-*got.Similarity.Cosine) > 1e-5 ||
		*s.Cosine == *s.Intact || !(*s.SelfIntact < 0.9999) {
		t.Errorf("with 5 heads off: similarity %+v", s)
	} else {
		t.Logf("5 heads off: cosine %.4f (intact %.4f), the sentence vs itself intact %.4f", *s.Cosine, *s.Intact, *s.SelfIntact)
	}
}

// TestBadText: over-long text (the message names the model's context), invalid UTF-8 (the
// textinput rule), empty text, generation on an encoder.
func TestBadText(t *testing.T) {
	for _, name := range []string{NameMiniLM, NameSmolLM2} {
		m := openModel(t, name)
		ctx := map[string]string{NameMiniLM: "context is 512", NameSmolLM2: "context is 8192"}[name]
		for _, c := range []struct {
			text, want string
		}{
			{strings.Repeat("word ", 100), ctx},
			{strings.Repeat("word ", 100000), ctx},
			{"ab\xffc", "invalid UTF-8 at byte offset 2 (0xff)"},
			{"", "no tokens"},
		} {
			_, err := m.Analyze(Request{Text: c.text})
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: Analyze(%.20q…): %v, want one line with %q", name, c.text, err, c.want)
			}
		}
	}
	m := openModel(t, NameMiniLM)
	if _, err := m.Step(Request{Text: "a"}); err == nil || !strings.Contains(err.Error(), "decoder") {
		t.Errorf("Step on an encoder: %v", err)
	}
	if _, err := m.Analyze(Request{Text: "a", Text2: "\xc3"}); err == nil || !strings.Contains(err.Error(), "second sentence: invalid UTF-8") {
		t.Errorf("invalid second sentence: %v", err)
	}
}

// TestOpenRefuses: a model the explorer cannot run is one line saying why.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gpt2 := filepath.Dir(write("gpt2/config.json", `{"model_type":"gpt2"}`))
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.gguf"), "no such file or folder"},
		{write("model.bin", "PK\x03\x04 a zip, not a model"), "not a GGUF file"},
		{write("short.gguf", "GG"), "not a GGUF file"},
		{write("trunc.gguf", "GGUF\x03\x00\x00\x00"), "trunc.gguf"},
		{gpt2, `model_type "gpt2"`},
		{filepath.Join("..", "..", "models", "gguf", "testdata", "synthetic.gguf"), `architecture "test" is not supported (llama is)`},
		{empty, "no config.json"},
		{filepath.Dir(write("bert/config.json", `{"model_type":"bert","hidden_size":8,"num_attention_heads":2,"num_hidden_layers":1,"intermediate_size":8,"vocab_size":10,"max_position_embeddings":8,"type_vocab_size":1,"hidden_act":"gelu","layer_norm_eps":1e-12}`)), "tokenizer"},
	} {
		m, err := Open(c.path, "go", 0)
		if err == nil {
			m.Close()
			t.Errorf("Open(%s): no error, want %q", c.path, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Open(%s): %v, want one line with %q", c.path, err, c.want)
		}
	}
	if _, err := Open("", "tpu", 0); err == nil || !strings.Contains(err.Error(), "unknown backend") {
		t.Errorf("backend tpu: %v", err)
	}
}

// TestSmolLM2StepsMatchGenerate: stepping greedily gives the ids of `mhalab generate --json
// --greedy`; the KV cache grows by one position of keys and values of the 3 key/value heads per
// layer and step; the GQA groups are the query heads 0–2, 3–5, 6–8; the analysed distribution's
// first token is the first generated one.
func TestSmolLM2StepsMatchGenerate(t *testing.T) {
	m := openModel(t, NameSmolLM2)
	const prompt, steps = "The capital of France is", 5
	var out bytes.Buffer
	if err := greedyGenerate(prompt, steps, &out); err != nil {
		t.Fatal(err)
	}
	var want struct{ IDs []int }
	if err := json.Unmarshal(out.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	info := m.Info()
	if got, _ := json.Marshal(info.Groups); string(got) != "[[0,1,2],[3,4,5],[6,7,8]]" {
		t.Errorf("groups %s", got)
	}
	a, err := m.Analyze(Request{Text: prompt})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.IDs) == 0 || a.Next[0].ID != want.IDs[0] {
		t.Errorf("analyse: most likely next %+v, generate's first %v", a.Next[0], want.IDs)
	}
	var res *Result
	perToken := int64(2 * info.KVHeads * info.HeadDim * 4)
	for i := range len(want.IDs) {
		if res, err = m.Step(Request{Text: prompt, Reset: i == 0}); err != nil {
			t.Fatal(err)
		}
		if n := len(res.IDs); res.Cache.Positions != n || res.Cache.BytesPerLayer != int64(n)*perToken || res.Cache.MHABytesPerLayer != 3*res.Cache.BytesPerLayer {
			t.Errorf("step %d: %d ids, cache %+v", i, n, res.Cache)
		}
	}
	if toJSON(res.Generated) != toJSON(want.IDs) {
		t.Errorf("stepped %v, generate --json --greedy %v", res.Generated, want.IDs)
	}
	t.Logf("generated %v; last step %.0f ms", res.Generated, res.Millis)

	// Analysing the generation with other controls keeps its tokens and its cache.
	again, err := m.Analyze(Request{Text: prompt, Generation: true, Temperature: 0.8, TopK: 5})
	if err != nil {
		t.Fatal(err)
	}
	if toJSON(again.IDs) != toJSON(res.IDs) || again.Cache == nil || again.Cache.Positions != res.Cache.Positions || again.Kept != 5 {
		t.Errorf("analysing the generation: ids %v (want %v), cache %+v, %d kept (want 5)", again.IDs, res.IDs, again.Cache, again.Kept)
	}

	// Switching heads off moves the next-token distribution.
	var off []Head
	for l := range 4 {
		for h := range info.Heads {
			off = append(off, Head{l, h})
		}
	}
	cut, err := m.Analyze(Request{Text: prompt, Ablate: off})
	if err != nil {
		t.Fatal(err)
	}
	if cut.Next[0].ID == a.Next[0].ID && math.Abs(cut.Next[0].P-a.Next[0].P) < 1e-3 {
		t.Errorf("layers 0-3 off: next %+v, intact %+v: no change", cut.Next[0], a.Next[0])
	}
	t.Logf("layers 0-3 off: next %q %.3f (intact %q %.3f)", cut.Next[0].Token, cut.Next[0].P, a.Next[0].Token, a.Next[0].P)
	step, err := m.Step(Request{Text: prompt, Reset: true, Ablate: off})
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Generated) != 1 || step.Generated[0] != cut.Next[0].ID || step.Cache.Positions != len(step.IDs) {
		t.Errorf("a step with layers 0-3 off generated %v (cache %+v), want the ablated argmax %d", step.Generated, step.Cache, cut.Next[0].ID)
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
