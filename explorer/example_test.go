package explorer_test

import (
	"fmt"
	"os"

	"github.com/mhalab/mhalab/explorer"
)

// Summaries and the page for weights from any model: here one layer with two heads over three
// tokens, a previous-token head and a head that looks at [SEP].
func Example() {
	tokens := []string{"[CLS]", "hello", "[SEP]"}
	att := [][][][]float32{{
		{{1, 0, 0}, {1, 0, 0}, {0, 1, 0}}, // head 0: each token looks at the one before
		{{0, 0, 1}, {0, 0, 1}, {0, 0, 1}}, // head 1: everything on [SEP]
	}}
	sums, err := explorer.Summarize(att, tokens)
	if err != nil {
		panic(err)
	}
	for _, s := range sums[0] {
		fmt.Printf("head %d: previous %.2f, [SEP] %.2f, entropy %.2f → %s\n", s.Head, s.PrevShare, s.SEPShare, s.Entropy, s.Kind)
	}
	f, err := os.CreateTemp("", "explorer-*.html")
	if err != nil {
		panic(err)
	}
	defer os.Remove(f.Name())
	if err := explorer.Write(f, explorer.Data{Title: "example", Sentence: "hello", Tokens: tokens, Attentions: att}); err != nil {
		panic(err)
	}
	f.Close()
	// Output:
	// head 0: previous 1.00, [SEP] 0.00, entropy 0.00 → previous token
	// head 1: previous 0.00, [SEP] 1.00, entropy 0.00 → delimiter
}
