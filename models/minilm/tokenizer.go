package minilm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/normalizer"
	"github.com/sugarme/tokenizer/pretrained"
	"golang.org/x/text/unicode/norm"
)

// ErrInvalidUTF8 is returned by Tokenizer.Encode for text that is not valid UTF-8.
var ErrInvalidUTF8 = errors.New("minilm: text is not valid UTF-8")

// Tokenizer is the model's WordPiece tokenizer, read from tokenizer.json with
// github.com/sugarme/tokenizer, set up to give Hugging Face tokenizers' ids:
//
//   - the text is cleaned first as Hugging Face's BertNormalizer does (cleanText);
//   - padding and truncation are off (the file asks for padding to 128 and truncation at 128;
//     Encode returns exactly the sentence's tokens, and Truncate applies the model's limit);
//   - accents are stripped as Hugging Face does: the file's BertNormalizer has strip_accents
//     null, which Hugging Face reads as "same as lowercase" (true) and sugarme reads as false,
//     so the normaliser is rebuilt from the file's settings with that rule; and Hugging Face
//     strips accents by decomposing (NFD) and dropping the combining marks (Mn), while
//     sugarme only drops the marks, so the text is NFD-normalised first. Without either step
//     "café" becomes [UNK].
type Tokenizer struct {
	tk           *tokenizer.Tokenizer
	clsID, sepID int
}

// Encoding is one tokenised sentence: [CLS] pieces… [SEP].
type Encoding struct {
	IDs    []int    // vocabulary ids, [L]
	Tokens []string // the pieces, [L] ("##" marks a word's continuation)
}

// Len is the number of tokens L, [CLS] and [SEP] included.
func (e Encoding) Len() int { return len(e.IDs) }

// LoadTokenizer reads tokenizer.json.
func LoadTokenizer(path string) (*Tokenizer, error) {
	tk, err := pretrained.FromFile(path)
	if err != nil {
		return nil, fmt.Errorf("minilm: tokenizer %s: %w", path, err)
	}
	tk.WithPadding(nil)
	tk.WithTruncation(nil)
	n, err := bertNormalizer(path)
	if err != nil {
		return nil, err
	}
	tk.WithNormalizer(n)
	t := &Tokenizer{tk: tk}
	var ok bool
	if t.clsID, ok = tk.TokenToId("[CLS]"); !ok {
		return nil, fmt.Errorf("minilm: tokenizer %s has no [CLS] token", path)
	}
	if t.sepID, ok = tk.TokenToId("[SEP]"); !ok {
		return nil, fmt.Errorf("minilm: tokenizer %s has no [SEP] token", path)
	}
	return t, nil
}

// bertNormalizer reads the BertNormalizer settings of tokenizer.json and builds sugarme's
// normaliser with Hugging Face's meaning of strip_accents null (= lowercase).
func bertNormalizer(path string) (normalizer.Normalizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("minilm: tokenizer %s: %w", path, err)
	}
	var file struct {
		Normalizer *struct {
			Type               string `json:"type"`
			CleanText          bool   `json:"clean_text"`
			HandleChineseChars bool   `json:"handle_chinese_chars"`
			StripAccents       *bool  `json:"strip_accents"`
			Lowercase          bool   `json:"lowercase"`
		} `json:"normalizer"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("minilm: tokenizer %s: %w", path, err)
	}
	n := file.Normalizer
	if n == nil || n.Type != "BertNormalizer" {
		return nil, fmt.Errorf("minilm: tokenizer %s: want a BertNormalizer", path)
	}
	strip := n.Lowercase
	if n.StripAccents != nil {
		strip = *n.StripAccents
	}
	// clean_text is done by cleanText before the library sees the text (its own version misses
	// Unicode whitespace such as U+00A0 and garbles the text around removed format characters).
	return normalizer.NewBertNormalizer(false, n.Lowercase, n.HandleChineseChars, strip), nil
}

// cleanText is BertNormalizer's clean_text as Hugging Face tokenizers implements it: drop
// U+0000, U+FFFD and control characters (categories Cc, Cf, Co and unassigned, except tab,
// newline and carriage return), then turn every whitespace character (Unicode White_Space:
// tab, newline, U+00A0, U+3000, U+2028, ...) into a space.
func cleanText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == 0 || r == utf8.RuneError:
			continue
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co) || !assigned(r):
			continue
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// assigned reports whether r has a Unicode category other than Cn (unassigned).
func assigned(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// Encode tokenises text into [CLS] pieces… [SEP], without truncation (see Truncate). An empty
// or whitespace-only text gives [CLS] [SEP], as Hugging Face's tokenizer does.
func (t *Tokenizer) Encode(text string) (enc Encoding, err error) {
	if !utf8.ValidString(text) {
		return Encoding{}, ErrInvalidUTF8
	}
	defer func() { // the library is not ours: a panic in it becomes an error
		if r := recover(); r != nil {
			err = fmt.Errorf("minilm: tokenizer failed on %q: %v", text, r)
		}
	}()
	e, err := t.tk.EncodeSingle(norm.NFD.String(cleanText(text)), true)
	if err != nil {
		return Encoding{}, fmt.Errorf("minilm: tokenizer failed on %q: %w", text, err)
	}
	return Encoding{IDs: append([]int(nil), e.Ids...), Tokens: append([]string(nil), e.Tokens...)}, nil
}

// Truncate returns enc cut to at most maxTokens tokens (maxTokens ≥ 2), keeping [CLS] and the
// final [SEP] as Hugging Face's truncation does, and how many tokens were dropped.
func (t *Tokenizer) Truncate(enc Encoding, maxTokens int) (Encoding, int) {
	if maxTokens < 2 {
		maxTokens = 2
	}
	n := enc.Len()
	if n <= maxTokens {
		return enc, 0
	}
	ids := append(append([]int(nil), enc.IDs[:maxTokens-1]...), t.sepID)
	toks := append(append([]string(nil), enc.Tokens[:maxTokens-1]...), "[SEP]")
	return Encoding{IDs: ids, Tokens: toks}, n - maxTokens
}

// IsSpecial reports whether id is [CLS] or [SEP].
func (t *Tokenizer) IsSpecial(id int) bool { return id == t.clsID || id == t.sepID }
