package smollm2

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// mergeSlowly is the merge loop as first written (one scan per merge, O(n²)): the reference for
// the heap-based merge.
func (t *Tokenizer) mergeSlowly(syms []string) []string {
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
	return syms
}

// nextSpecialSlowly is the special-token search as first written.
func (t *Tokenizer) nextSpecialSlowly(s string) (int, string) {
	best, tok := len(s), ""
	for _, sp := range t.special {
		if i := strings.Index(s[:min(len(s), best+len(sp))], sp); i >= 0 && i < best {
			best, tok = i, sp
		}
	}
	return best, tok
}

// randomText draws text from pieces that merge in many ways: letters, repeats, spaces,
// newlines, digits, accents, emoji and special tokens.
func randomText(r *rand.Rand) string {
	pieces := []string{"a", "aa", "b", "ab", "the", " ", "  ", "\n", "\t", "1", "22", "é", "ü", "日本", "🙂", "'s", ".", "!!",
		"<|im_start|>", "<|im_end|>", "<", "|", ">", "ing", "er", "  \n", "hello", " world", "0"}
	var b strings.Builder
	for range r.IntN(60) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// TestMergeEqualsReference: the heap-based merge and special-token search give exactly the ids
// of the first implementation on random text (the Hugging Face fixture checks both against
// transformers).
func TestMergeEqualsReference(t *testing.T) {
	tok := testTokenizer(t)
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		text := randomText(r)
		for _, w := range splitWords(text) {
			var syms []string
			for i := 0; i < len(w); i++ {
				if c := string(byteToRune[w[i]]); tok.known(c) {
					syms = append(syms, c)
				}
			}
			want := tok.mergeSlowly(slices.Clone(syms))
			if got := tok.merge(slices.Clone(syms)); !slices.Equal(got, want) {
				t.Fatalf("word %q: merge %q, want %q", w, got, want)
			}
		}
		for s := text; s != ""; {
			i, sp := tok.nextSpecial(s)
			wi, wsp := tok.nextSpecialSlowly(s)
			if i != wi || sp != wsp {
				t.Fatalf("%q: nextSpecial = %d %q, want %d %q", s, i, sp, wi, wsp)
			}
			if sp == "" {
				break
			}
			s = s[i+len(sp):]
		}
	}
}

// TestMinTokensIsALowerBound: MinTokens never exceeds the true count, also for text made of
// the longest tokens, special tokens and bytes the vocabulary drops.
func TestMinTokensIsALowerBound(t *testing.T) {
	tok := testTokenizer(t)
	r := rand.New(rand.NewPCG(3, 4))
	longest := ""
	for id := range tok.vocab {
		if len(tok.tokenBytes(id)) > len(longest) {
			longest = tok.tokenBytes(id)
		}
	}
	texts := []string{"", strings.Repeat(longest, 50), strings.Repeat("<|im_start|>", 40), strings.Repeat("\x01", 100), "\n" + strings.Repeat(" ", 300)}
	for range 2000 {
		texts = append(texts, randomText(r))
	}
	for _, text := range texts {
		n, bound := len(tok.Encode(text)), tok.MinTokens(text)
		if bound > n {
			t.Fatalf("%q: MinTokens %d > %d tokens", text, bound, n)
		}
	}
	if tok.MaxTokenBytes() != len(longest) {
		t.Errorf("MaxTokenBytes = %d, want %d", tok.MaxTokenBytes(), len(longest))
	}
	if n := tok.MinTokens(strings.Repeat("a", 1<<20)); n < (1<<20)/len(longest) {
		t.Errorf("MinTokens of 1 MiB = %d, want at least %d", n, (1<<20)/len(longest))
	}
}

// TestEncodeLongWord: a long word is merged in O(n log n): 200 000 letters give the same ids as
// 50 000 copies of the 4-letter token (no timing: the O(n²) merge took hours at this size).
func TestEncodeLongWord(t *testing.T) {
	tok := testTokenizer(t)
	ids := tok.Encode(strings.Repeat("a", 200000))
	if len(ids) != 50000 || slices.ContainsFunc(ids, func(id int) bool { return id != ids[0] }) {
		t.Fatalf("200000 × a: %d ids, want 50000 copies of one token", len(ids))
	}
}
