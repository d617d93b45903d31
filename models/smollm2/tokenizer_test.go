package smollm2

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mhalab/mhalab/models/gguf"
)

// tokenizerFixture is testdata/tokenizer.json, written by gen_fixture.py with Hugging Face's
// tokenizer for the same GGUF file.
type tokenizerFixture struct {
	Strings []struct {
		Text    string
		IDs     []int
		Decoded string
	}
	Chats []struct {
		Messages []Message
		Text     string
		IDs      []int
	}
}

func readFixture(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

var (
	tokOnce sync.Once
	tokVal  *Tokenizer
	tokErr  error
)

// testTokenizer reads the tokenizer of the installed model (once).
func testTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	path := modelFile(t)
	tokOnce.Do(func() {
		f, err := gguf.Open(path)
		if err != nil {
			tokErr = err
			return
		}
		defer f.Close()
		tokVal, tokErr = NewTokenizer(f)
	})
	if tokErr != nil {
		t.Fatal(tokErr)
	}
	return tokVal
}

// TestTokenizerMatchesHuggingFace: ids and decoded text equal Hugging Face's on every string of
// the fixture (≥ 300).
func TestTokenizerMatchesHuggingFace(t *testing.T) {
	var fx tokenizerFixture
	readFixture(t, "tokenizer.json", &fx)
	if len(fx.Strings) < 300 {
		t.Fatalf("fixture has %d strings, want ≥ 300", len(fx.Strings))
	}
	tok := testTokenizer(t)
	bad := 0
	for _, s := range fx.Strings {
		got := tok.Encode(s.Text)
		if !slices.Equal(got, s.IDs) {
			bad++
			if bad <= 10 {
				t.Errorf("Encode(%q) = %v, want %v (words %q)", s.Text, got, s.IDs, splitWords(s.Text))
			}
		}
		dec, err := tok.Decode(s.IDs)
		if err != nil || dec != s.Decoded {
			t.Errorf("Decode(%v) = %q, %v; want %q", s.IDs, dec, err, s.Decoded)
		}
		// Streaming gives the same text.
		sd := tok.NewStreamDecoder()
		var b strings.Builder
		for _, id := range s.IDs {
			b.WriteString(sd.Next(id))
		}
		b.WriteString(sd.Flush())
		if b.String() != s.Decoded {
			t.Errorf("streamed %v = %q, want %q", s.IDs, b.String(), s.Decoded)
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d strings tokenised differently", bad, len(fx.Strings))
	}
}

// TestChatTemplateMatchesHuggingFace: apply_chat_template(..., add_generation_prompt=True),
// text and ids, including the default system prompt.
func TestChatTemplateMatchesHuggingFace(t *testing.T) {
	var fx tokenizerFixture
	readFixture(t, "tokenizer.json", &fx)
	tok := testTokenizer(t)
	for _, c := range fx.Chats {
		text := ChatML(c.Messages, true)
		if text != c.Text {
			t.Errorf("ChatML(%v) = %q, want %q", c.Messages, text, c.Text)
		}
		if ids := tok.Encode(text); !slices.Equal(ids, c.IDs) {
			t.Errorf("ids of %q = %v, want %v", text, ids, c.IDs)
		}
	}
}

// TestSplitWords: the pre-tokenizer's rules, one by one.
func TestSplitWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Hello world", []string{"Hello", " world"}},
		{"a   b", []string{"a", "  ", " b"}},
		{"a\n\nb", []string{"a", "\n", "\n", "b"}},
		{"x  ", []string{"x", "  "}},
		{"I'm", []string{"I", "'m"}},
		{"don't", []string{"don", "'t"}},
		{" 123abc", []string{" 123", "abc"}},
		{"!! ?", []string{"!!", " ?"}},
		{"e\u0301", []string{"e", "\u0301"}},
		{"'x", []string{"'", "x"}},
	} {
		if got := splitWords(c.in); !slices.Equal(got, c.want) {
			t.Errorf("splitWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
