package smollm2

import (
	"container/heap"
	"fmt"
	"slices"
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
	vocab   []string       // id → token (byte-level characters, or a special token's text)
	ids     map[string]int // token → id
	ranks   map[string]int // "left right" → merge rank (a byte-level token never holds a plain space)
	special []string       // special tokens, longest first
	// specialStart[b]: some special token starts with byte b.
	specialStart [256]bool
	// keepsByte[b]: b's byte-level character is in the vocabulary (Encode keeps it).
	keepsByte [256]bool
	// maxTokenBytes is the length in bytes of the longest token's text; dropsMerges is true
	// when some merge result is not in the vocabulary (Encode then drops it: see MinTokens).
	maxTokenBytes int
	dropsMerges   bool
	isSpecal      []bool // id → special
	cache         map[string][]int
	EOS, BOS      int // end- and beginning-of-sequence ids (tokenizer.ggml.eos_token_id, bos_token_id)
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
	t.special = slices.DeleteFunc(t.special, func(s string) bool { return s == "" })
	for _, sp := range t.special {
		t.specialStart[sp[0]] = true
	}
	for b := range 256 {
		t.keepsByte[b] = t.known(string(byteToRune[b]))
	}
	for id := range t.vocab {
		t.maxTokenBytes = max(t.maxTokenBytes, len(t.tokenBytes(id)))
	}
	for m := range t.ranks {
		if !t.known(strings.Replace(m, " ", "", 1)) {
			t.dropsMerges = true
			break
		}
	}
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
// it returns len(s), "" when there is none. It looks at each byte once (O(len(s)) plus the
// candidates at bytes that start a special token).
func (t *Tokenizer) nextSpecial(s string) (int, string) {
	for i := 0; i < len(s); i++ {
		if !t.specialStart[s[i]] {
			continue
		}
		for _, sp := range t.special { // longest first
			if strings.HasPrefix(s[i:], sp) {
				return i, sp
			}
		}
	}
	return len(s), ""
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
	syms = t.merge(syms)
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

// merge applies the merges to the symbols of one word: the adjacent pair of lowest rank first,
// the leftmost of equal ranks, until no pair has a rank. The symbols are a linked list and the
// candidate pairs a heap ordered by (rank, position), each checked when it comes out (a pair
// whose symbols have changed since is skipped): O(n log n) for a word of n bytes, where
// rescanning the word after each merge took O(n²) (hours for a word of a few hundred kB).
func (t *Tokenizer) merge(syms []string) []string {
	n := len(syms)
	if n < 2 {
		return syms
	}
	next := make([]int, n) // next[i]: the symbol after i (n: none); a merged-away symbol is ""
	prev := make([]int, n)
	for i := range n {
		next[i], prev[i] = i+1, i-1
	}
	h := &pairHeap{}
	push := func(i int) {
		if i < 0 || next[i] >= n {
			return
		}
		j := next[i]
		if r, ok := t.ranks[syms[i]+" "+syms[j]]; ok {
			heap.Push(h, pair{rank: r, left: i, right: j, ls: syms[i], rs: syms[j]})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(i)
	}
	for h.Len() > 0 {
		p := heap.Pop(h).(pair)
		if next[p.left] != p.right || syms[p.left] != p.ls || syms[p.right] != p.rs {
			continue // stale: a symbol of the pair was merged with another since
		}
		syms[p.left] += syms[p.right]
		syms[p.right] = ""
		next[p.left] = next[p.right]
		if next[p.left] < n {
			prev[next[p.left]] = p.left
		}
		push(prev[p.left])
		push(p.left)
	}
	out := syms[:0]
	for i := 0; i < n; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

// pair is a candidate merge of the adjacent symbols left and right (their texts then: ls, rs).
type pair struct {
	rank, left, right int
	ls, rs            string
}

// pairHeap orders pairs by rank, then position (the leftmost of equal ranks first).
type pairHeap []pair

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(a, b int) bool {
	return h[a].rank < h[b].rank || (h[a].rank == h[b].rank && h[a].left < h[b].left)
}
func (h pairHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pair)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// MaxTokenBytes is the length in bytes of the longest token's text (81 for SmolLM2: a newline
// and 80 spaces).
func (t *Tokenizer) MaxTokenBytes() int { return t.maxTokenBytes }

// MinTokens is a lower bound of len(Encode(text)) computed in one pass over the bytes, without
// tokenizing: every token stands for at most MaxTokenBytes bytes of the text, and the bytes
// Encode drops (characters missing from the vocabulary) are not counted. It lets a caller
// refuse text that cannot fit a context before spending the tokenizer's time on it. It is 0
// when the vocabulary lacks some merge result (Encode may then drop whole symbols).
func (t *Tokenizer) MinTokens(text string) int {
	if t.dropsMerges || t.maxTokenBytes == 0 {
		return 0
	}
	kept := 0
	for i := 0; i < len(text); i++ {
		if t.keepsByte[text[i]] {
			kept++
		}
	}
	return (kept + t.maxTokenBytes - 1) / t.maxTokenBytes
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
