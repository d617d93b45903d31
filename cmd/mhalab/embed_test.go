package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/models/minilm"
)

// needModel skips when the setup step's model is missing (fails under CI, which runs it).
func needModel(t *testing.T) {
	t.Helper()
	dir, err := minilm.DefaultDir()
	if err == nil {
		err = minilm.CheckFiles(dir)
	}
	if err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("all-MiniLM-L6-v2 not installed (run scripts/setup.sh --only minilm): %v", err))
	}
}

// TestEmbedJSON: `mhalab embed --json` prints exactly one JSON object per sentence with the
// contract's fields, unit embeddings of 384 floats, the published similarities, and nothing
// else on stdout; flags may follow the sentences.
func TestEmbedJSON(t *testing.T) {
	needModel(t)
	code, stdout, stderr := runCLI("embed", "--backend", "go", "A man is eating food.", "A man is eating a piece of bread.", "--json", "The girl is carrying a baby.")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines on stdout, want 3:\n%s", len(lines), stdout)
	}
	var embs [][]float64
	for i, line := range lines {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if len(obj) != 3 {
			t.Errorf("line %d has keys %v, want sentence, tokens, embedding", i+1, obj)
		}
		var e struct {
			Sentence  string    `json:"sentence"`
			Tokens    []string  `json:"tokens"`
			Embedding []float64 `json:"embedding"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		norm := 0.0
		for _, x := range e.Embedding {
			norm += x * x
		}
		if len(e.Embedding) != 384 || math.Abs(norm-1) > 1e-5 || e.Tokens[0] != "[CLS]" || e.Tokens[len(e.Tokens)-1] != "[SEP]" {
			t.Errorf("line %d: %d floats, |e|² = %g, tokens %q", i+1, len(e.Embedding), norm, e.Tokens)
		}
		embs = append(embs, e.Embedding)
	}
	dot := func(a, b []float64) (s float64) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	if c := math.Round(dot(embs[0], embs[1])*1e4) / 1e4; c != 0.7553 {
		t.Errorf("cos(0, 1) = %g, want 0.7553", c)
	}
	if c := math.Round(dot(embs[0], embs[2])*1e4) / 1e4; c != -0.1050 {
		t.Errorf("cos(0, 2) = %g, want -0.1050", c)
	}
}

// TestEmbedTruncates: input longer than 256 tokens is cut to 256 with a warning on stderr
// (stdout stays pure JSON); --max-tokens raises the limit.
func TestEmbedTruncates(t *testing.T) {
	needModel(t)
	long := strings.Repeat("word ", 300)
	code, stdout, stderr := runCLI("embed", "--backend", "go", "--json", long)
	var e struct{ Tokens []string }
	if code != 0 || json.Unmarshal([]byte(stdout), &e) != nil || len(e.Tokens) != 256 {
		t.Fatalf("exit %d, %d tokens, stderr %q", code, len(e.Tokens), stderr)
	}
	if !strings.Contains(stderr, "warning: sentence 1 has 302 tokens; truncated to the first 256") {
		t.Errorf("stderr %q: want the truncation warning", stderr)
	}
	code, stdout, stderr = runCLI("embed", "--backend", "go", "--json", "--max-tokens", "400", long)
	if code != 0 || json.Unmarshal([]byte(stdout), &e) != nil || len(e.Tokens) != 302 || stderr != "" {
		t.Fatalf("--max-tokens 400: exit %d, %d tokens, stderr %q", code, len(e.Tokens), stderr)
	}
}

// TestEmbedBadInput: each mistake is one clear line on stderr and exit 1, nothing on stdout.
func TestEmbedBadInput(t *testing.T) {
	needModel(t)
	dir, _ := minilm.DefaultDir()
	truncated := t.TempDir()
	for _, name := range []string{"config.json", "tokenizer.json"} {
		if err := os.Symlink(filepath.Join(dir, name), filepath.Join(truncated, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(truncated, "model.safetensors"), []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"embed", ""}, "sentence 1 is empty or whitespace only"},
		{[]string{"embed", "fine", " \t\n"}, "sentence 2 is empty or whitespace only"},
		{[]string{"embed", "--max-tokens", "513", "x"}, "--max-tokens 513 is above the model's 512 positions"},
		{[]string{"embed", "ok", "bad \xff\xfe"}, "sentence 2: invalid UTF-8 at byte offset 4 (0xff)"},
		{[]string{"embed", "--model", t.TempDir(), "x"}, "config.json is missing"},
		{[]string{"embed", "--model", truncated, "x"}, "model.safetensors is truncated: 5 bytes, want 90868376"},
		{[]string{"attention", ""}, "sentence 1 is empty or whitespace only"},
		{[]string{"attention", "--max-tokens", "1000", "x"}, "--max-tokens 1000 is above"},
		{[]string{"attention", "--html", "/nonexistent/dir/page.html", "x"}, "--html"},
	} {
		code, stdout, stderr := runCLI(c.args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("mhalab %q: exit %d, stdout %q, stderr %q; want exit 1 and one line containing %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

// TestAttentionJSONAndHTML: `mhalab attention --json` prints one object with tokens, ids and
// attentions [6][12][L][L] whose rows sum to 1; "it" → "cat" at layer 5 head 11 is 0.71
// (transformers); --html writes a self-contained page.
func TestAttentionJSONAndHTML(t *testing.T) {
	needModel(t)
	page := filepath.Join(t.TempDir(), "cat.html")
	code, stdout, stderr := runCLI("attention", "--backend", "go", "--json", "--html", page, "The cat sat on the mat because it was tired.")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var a struct {
		Tokens     []string
		IDs        []int
		Attentions [][][][]float64
	}
	if strings.Count(stdout, "\n") != 1 || json.Unmarshal([]byte(stdout), &a) != nil {
		t.Fatalf("stdout is not one JSON line: %.200q", stdout)
	}
	wantIDs := []int{101, 1996, 4937, 2938, 2006, 1996, 13523, 2138, 2009, 2001, 5458, 1012, 102}
	L := len(wantIDs)
	if len(a.IDs) != L || len(a.Tokens) != L || len(a.Attentions) != 6 || len(a.Attentions[0]) != 12 || len(a.Attentions[5][11]) != L {
		t.Fatalf("ids %v tokens %q, attentions %d layers", a.IDs, a.Tokens, len(a.Attentions))
	}
	for i := range wantIDs {
		if a.IDs[i] != wantIDs[i] {
			t.Fatalf("ids %v, want %v", a.IDs, wantIDs)
		}
	}
	for _, layer := range a.Attentions {
		for _, head := range layer {
			for _, row := range head {
				s := 0.0
				for _, p := range row {
					s += p
				}
				if len(row) != L || math.Abs(s-1) > 1e-5 {
					t.Fatalf("a row of %d weights sums to %g", len(row), s)
				}
			}
		}
	}
	if w := a.Attentions[5][11][8][2]; a.Tokens[8] != "it" || a.Tokens[2] != "cat" || math.Round(w*100)/100 != 0.71 {
		t.Errorf("%s → %s at layer 5 head 11: %g, want 0.71", a.Tokens[8], a.Tokens[2], w)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(string(html), "http://www.w3.org/2000/svg", "") // a namespace name, not a request
	for _, bad := range []string{"http://", "https://", " src=", " href=", "url(", "@import"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page contains %q: not self-contained", bad)
		}
	}
	if !strings.Contains(body, "default-src 'none'") {
		t.Errorf("the page has no Content-Security-Policy forbidding requests")
	}
}
