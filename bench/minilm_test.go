package bench

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/models/minilm"
)

func needMiniLM(t *testing.T) string {
	t.Helper()
	dir, err := minilm.DefaultDir()
	if err == nil {
		err = minilm.CheckFiles(dir)
	}
	if err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("all-MiniLM-L6-v2 not installed (run scripts/setup.sh --only minilm): %v", err))
	}
	return dir
}

// TestMiniLMSentences: the suite's 32 sentences are distinct and 12 to 14 tokens long, as the
// issue asks ("batches of 32 sentences of ~12 tokens").
func TestMiniLMSentences(t *testing.T) {
	m, err := minilm.Load(needMiniLM(t))
	if err != nil {
		t.Fatal(err)
	}
	s := minilmSentences(32)
	seen := map[string]bool{}
	encs, _, err := m.Encode(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range encs {
		if seen[s[i]] || e.Len() < 12 || e.Len() > 14 {
			t.Errorf("sentence %d %q: %d tokens (duplicate: %v)", i, s[i], e.Len(), seen[s[i]])
		}
		seen[s[i]] = true
	}
}

// TestBenchMiniLMQuick: the suite runs on the pure-Go backend and reports sentences/s; a
// Python that does not exist becomes a note, not a failure.
func TestBenchMiniLMQuick(t *testing.T) {
	needMiniLM(t)
	var stdout, stderr bytes.Buffer
	cfg := Config{Quick: true, Suites: []string{"minilm"}, Backends: []string{"go"}, Pythons: []string{"/nonexistent/python"}}
	if err := Run(context.Background(), &stdout, &stderr, cfg); err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"## Sentence embeddings, all-MiniLM-L6-v2", "| mhalab models/minilm | go | 4 |", "PyTorch: /nonexistent/python"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
