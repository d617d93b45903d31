package smollm2

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mhalab/mhalab/models/gguf"
)

// Tokenizer is SmolLM2's byte-level BPE tokenizer (GPT-2's scheme), built from the GGUF file's
// vocabulary (tokenizer.ggml.tokens), merges (tokenizer.ggml.merges) and token types. It gives
// the same ids as Hugging Face's tokenizer for the same file (testdata/tokenizer.json):
//
//  1. special tokens (type control or user-defined, e.g. <|im_start|>) are cut out of the text
//     first, leftmost-longest, and map to their ids;
//  2. the rest is split into words by GPT-2's pattern (splitWords);
//  3. each word's UTF-8 bytes become printable characters (byteToRune: a space is "Ġ"); a
//     character missing from the vocabulary is dropped;
//  4. adjacent symbols are merged by the merge list, lowest rank first, until none applies;
//     each resulting symbol is a vocabulary entry.
type Tokenizer struct {
	vocab    []string       // id → token (byte-level characters, or a special token's text)
	ids      map[string]int // token → id
	ranks    map[string]int // "left right" → merge rank (a byte-level token never holds a plain space)
	special  []string       // special tokens, longest first
	isSpecal []bool         // id → special
	cache    map[string][]int
	EOS, BOS int // end- and beginning-of-sequence ids (tokenizer.ggml.eos_token_id, bos_token_id)
}

// GGUF token types (llama.cpp's llama_token_type).
const (
	tokenNormal      = 1
	tokenControl     = 3
	tokenUserDefined = 4
)

// NewTokenizer reads the tokenizer of a GGUF file ("gpt2" model: byte-level BPE).
func NewTokenizer(f *gguf.File) (*Tokenizer, error) {
	model, err := f.String("tokenizer.ggml.model")
	if err != nil {
		return nil, err
	}
	if model != "gpt2" {
		return nil, fmt.Errorf("smollm2: %s: tokenizer model %q is not supported (byte-level BPE \"gpt2\" is)", f.Name, model)
	}
	vocab, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, err
	}
	merges, err := f.Strings("tokenizer.ggml.merges")
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{vocab: vocab, ids: make(map[string]int, len(vocab)), ranks: make(map[string]int, len(merges)),
		isSpecal: make([]bool, len(vocab)), cache: map[string][]int{}}
	for i, s := range vocab {
		if _, dup := t.ids[s]; !dup {
			t.ids[s] = i
		}
	}
	for i, m := range merges {
		if strings.Count(m, " ") != 1 {
			return nil, fmt.Errorf("smollm2: %s: merge %d %q is not two tokens separated by a space", f.Name, i, m)
		}
		if _, dup := t.ranks[m]; !dup {
			t.ranks[m] = i
		}
	}
	if v, ok := f.Get("tokenizer.ggml.token_type"); ok {
		types, ok := v.Any().([]int32)
		if !ok || len(types) != len(vocab) {
			return nil, fmt.Errorf("smollm2: %s: tokenizer.ggml.token_type is not %d int32s", f.Name, len(vocab))
		}
		for i, ty := range types {
			if ty == tokenControl || ty == tokenUserDefined {
				t.isSpecal[i] = true
				t.special = append(t.special, vocab[i])
			}
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool { return len(t.special[a]) > len(t.special[b]) })
	if t.EOS, err = f.Int("tokenizer.ggml.eos_token_id"); err != nil {
		return nil, err
	}
	if t.BOS, err = f.Int("tokenizer.ggml.bos_token_id"); err != nil {
		return nil, err
	}
	if t.EOS < 0 || t.EOS >= len(vocab) || t.BOS < 0 || t.BOS >= len(vocab) {
		return nil, fmt.Errorf("smollm2: %s: eos/bos token ids %d/%d outside the vocabulary of %d", f.Name, t.EOS, t.BOS, len(vocab))
	}
	return t, nil
}

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.vocab) }

// Token returns the vocabulary entry of id (byte-level characters, e.g. "Ġcat").
func (t *Tokenizer) Token(id int) string {
	if id < 0 || id >= len(t.vocab) {
		return fmt.Sprintf("<id %d>", id)
	}
	return t.vocab[id]
}

// ID returns the id of a vocabulary entry.
func (t *Tokenizer) ID(token string) (int, bool) {
	id, ok := t.ids[token]
	return id, ok
}

// Encode returns the ids of text (no beginning-of-sequence token: SmolLM2 adds none).
func (t *Tokenizer) Encode(text string) []int {
	var ids []int
	for len(text) > 0 {
		pos, tok := t.nextSpecial(text)
		for _, w := range splitWords(text[:pos]) {
			ids = append(ids, t.encodeWord(w)...)
		}
		if tok == "" {
			break
		}
		ids = append(ids, t.ids[tok])
		text = text[pos+len(tok):]
	}
	return ids
}

// nextSpecial finds the leftmost special token in s (the longest one at that position);
// it returns len(s), "" when there is none.
func (t *Tokenizer) nextSpecial(s string) (int, string) {
	best, tok := len(s), ""
	for _, sp := range t.special { // longest first: the first found at a position wins
		if i := strings.Index(s[:min(len(s), best+len(sp))], sp); i >= 0 && i < best {
			best, tok = i, sp
		}
	}
	return best, tok
}

// encodeWord applies the merges to one word (see Tokenizer).
func (t *Tokenizer) encodeWord(w string) []int {
	if ids, ok := t.cache[w]; ok {
		return ids
	}
	// Symbols: one byte-level character per byte of the word. A byte whose character is not in
	// the vocabulary is dropped before merging, as Hugging Face's BPE without an unknown token
	// does (SmolLM2 lacks 21 bytes: 6 control characters and 15 that UTF-8 never uses).
	syms := make([]string, 0, len(w))
	for i := 0; i < len(w); i++ {
		if c := string(byteToRune[w[i]]); t.known(c) {
			syms = append(syms, c)
		}
	}
	for len(syms) > 1 {
		bestRank, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := t.ranks[syms[i]+" "+syms[i+1]]; ok && (bestRank < 0 || r < bestRank) {
				bestRank, at = r, i
			}
		}
		if at < 0 {
			break
		}
		syms[at] += syms[at+1]
		syms = append(syms[:at+1], syms[at+2:]...)
	}
	ids := make([]int, 0, len(syms))
	for _, s := range syms {
		if id, ok := t.ids[s]; ok { // a merge result missing from the vocabulary is dropped, as in Hugging Face's BPE
			ids = append(ids, id)
		}
	}
	if len(t.cache) < 1<<16 {
		t.cache[w] = ids
	}
	return ids
}

// Decode returns the text of ids: byte-level tokens back to their bytes, special tokens as
// their text. Ids outside the vocabulary are an error.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		if id < 0 || id >= len(t.vocab) {
			return "", fmt.Errorf("smollm2: token id %d outside the vocabulary of %d", id, len(t.vocab))
		}
		b.WriteString(t.tokenBytes(id))
	}
	return b.String(), nil
}

// tokenBytes is the text of one token.
func (t *Tokenizer) tokenBytes(id int) string {
	s := t.vocab[id]
	if t.isSpecal[id] {
		return s
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if b, ok := runeToByte[r]; ok {
			out = append(out, b)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return string(out)
}

// StreamDecoder turns ids into text as they come, holding back the bytes of a character that
// is split across tokens until it is complete (an emoji is often 2–4 byte-level tokens).
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
}

// NewStreamDecoder starts a stream.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Next adds one id and returns the text that is now complete ("" while a character is split).
func (s *StreamDecoder) Next(id int) string {
	if id < 0 || id >= len(s.t.vocab) {
		return ""
	}
	s.pending = append(s.pending, s.t.tokenBytes(id)...)
	// Emit everything up to the last complete UTF-8 sequence.
	n := len(s.pending)
	cut := n
	for i := n - 1; i >= 0 && i >= n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s.pending[i]) {
			if !utf8.FullRune(s.pending[i:]) {
				cut = i
			}
			break
		}
	}
	out := string(s.pending[:cut])
	s.pending = append(s.pending[:0], s.pending[cut:]...)
	return out
}

// Flush returns what is held back (bytes of an incomplete character) and empties the stream.
func (s *StreamDecoder) Flush() string {
	out := string(s.pending)
	s.pending = s.pending[:0]
	return out
}

// known reports whether s is a vocabulary entry.
func (t *Tokenizer) known(s string) bool {
	_, ok := t.ids[s]
	return ok
}
