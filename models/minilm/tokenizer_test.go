package minilm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// tokenizerFixture is testdata/tokenizer_ids.json (gen_fixture.py, Hugging Face tokenizers).
type tokenizerFixture struct {
	TokenizersVersion string `json:"tokenizers_version"`
	Cases             []struct {
		Text   string   `json:"text"`
		IDs    []int    `json:"ids"`
		Tokens []string `json:"tokens"`
	} `json:"cases"`
}

// TestTokenizerMatchesHuggingFace: ids and tokens equal Hugging Face tokenizers' on every string
// of the fixture (accents, CJK, emoji, punctuation, long words, empty, whitespace only, ...).
func TestTokenizerMatchesHuggingFace(t *testing.T) {
	dir := modelDir(t)
	tk, err := LoadTokenizer(dir + "/" + FileTokenizer().Name)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(referenceDir(t), "tokenizer_ids.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx tokenizerFixture
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Cases) < 300 {
		t.Fatalf("fixture has %d strings, want ≥ 300", len(fx.Cases))
	}
	bad := 0
	for i, c := range fx.Cases {
		enc, err := tk.Encode(c.Text)
		if err != nil {
			t.Errorf("case %d %q: %v", i, c.Text, err)
			continue
		}
		if !slices.Equal(enc.IDs, c.IDs) || !slices.Equal(enc.Tokens, c.Tokens) {
			bad++
			if bad <= 20 {
				t.Errorf("case %d %q:\n  got  %v %q\n  want %v %q (tokenizers %s)", i, c.Text, enc.IDs, enc.Tokens, c.IDs, c.Tokens, fx.TokenizersVersion)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d strings differ from Hugging Face tokenizers", bad, len(fx.Cases))
	}
	t.Logf("%d strings, %d differ", len(fx.Cases), bad)
}
