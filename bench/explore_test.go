package bench

import (
	"strings"
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

// TestExploreReportAndGoals: the table shows each row (a note in one cell), and the goals hold
// only the xla:cpu rows, met when the median is within the limit.
func TestExploreReportAndGoals(t *testing.T) {
	rows := []exploreResult{
		{Backend: "xla:cpu", Model: "all-MiniLM-L6-v2", What: "update", Tokens: 32, Bucket: 32, FirstMS: 9000, TimesMS: []float64{40, 60}, MedianMS: 50, MaxMS: 60, LimitMS: 300, Load: "1 1 1"},
		{Backend: "xla:cpu", Model: "SmolLM2-135M-Instruct", What: "token", Tokens: 13, Bucket: 32, TimesMS: []float64{600}, MedianMS: 600, MaxMS: 600, LimitMS: 500, Load: "2 2 2"},
		{Backend: "go", Model: "SmolLM2-135M-Instruct", What: "token", MedianMS: 9000, LimitMS: 500},
		{Backend: "xla:cpu", Model: "x", What: "token", Note: "not installed: run scripts/setup.sh"},
	}
	var out strings.Builder
	printExplore(&out, rows)
	for _, want := range []string{
		"| all-MiniLM-L6-v2 | xla:cpu | update | 32 (32) | 9 s | 50.0 ms | 60.0 ms | 300 ms | ✓ | 1 1 1 |",
		"| SmolLM2-135M-Instruct | xla:cpu | token | 13 (32) |",
		"| 500 ms | ✗ | 2 2 2 |",
		"| x | xla:cpu | token | not installed: run scripts/setup.sh |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	goals := evaluateGoals(&benchReport{Explore: rows})
	if len(goals) != 2 || !goals[0].Met || goals[1].Met {
		t.Errorf("goals %+v: want MiniLM met, SmolLM2 not (go and the note left out)", goals)
	}
}
