package bench

import (
	"testing"

	"github.com/mhalab/mhalab/models/minilm"
)

// TestExplore32Tokens: the explore suite's sentences are 32 MiniLM tokens, as the limit
// is stated for.
func TestExplore32Tokens(t *testing.T) {
	m, err := minilm.Load(needMiniLM(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		enc, err := m.Tokenizer.Encode(explore32(i))
		if err != nil {
			t.Fatal(err)
		}
		if enc.Len() != 32 {
			t.Errorf("explore32(%d) is %d tokens, want 32: %q", i, enc.Len(), enc.Tokens)
		}
	}
}
