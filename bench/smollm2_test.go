package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/testenv"
	"github.com/mhalab/mhalab/models/smollm2"
)

func needSmolLM2(t *testing.T) {
	t.Helper()
	if _, err := smollm2.CheckDefault(); err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("SmolLM2-135M-Instruct not installed (run scripts/setup.sh --only smollm2): %v", err))
	}
}

// TestBenchSmolLM2Quick: the suite runs on the pure-Go backend, reports prefill and decode
// rates, and measures the KV cache from its tensors: 9 key/value heads hold exactly 3× the bytes
// of 3, equal to kvcatalog.Bytes, with the same logits (the 9-head model is the same model).
// A Python that does not exist becomes a note, not a failure.
func TestBenchSmolLM2Quick(t *testing.T) {
	needSmolLM2(t)
	var stdout, stderr bytes.Buffer
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	cfg := Config{Quick: true, Suites: []string{"smollm2"}, Backends: []string{"go"}, Pythons: []string{"/nonexistent/python"},
		JSONPath: jsonPath}
	if err := Run(context.Background(), &stdout, &stderr, cfg); err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"## Text generation, SmolLM2-135M-Instruct", "| mhalab models/smollm2, ", " | go | 16 | 4 |",
		"PyTorch: /nonexistent/python", "## KV cache of SmolLM2-135M-Instruct", // 30 layers × (keys + values) × heads × 64 positions × 64 × 4 bytes
		"| 3 | 9 | go | 64 / 64 | 2949120 (", "| 9 | 9 | go | 64 / 64 | 8847360 ("} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var rep benchReport
	data, err := os.ReadFile(jsonPath)
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.SmolLM2.Gen {
		if r.Backend == "go" && (len(r.DecodeMS) != 2 || rep.SmolLM2.Rounds != 2 || !strings.Contains(out, "timed in 2 alternating rounds")) {
			t.Errorf("go row %+v in %d rounds: want 2 timed runs, one per round, and the report saying so", r, rep.SmolLM2.Rounds)
		}
	}
	if kv := rep.SmolLM2.KV; len(kv) != 2 || kv[1].KVHeads != 9 || kv[1].MaxLogitDiff > 1e-3 {
		t.Errorf("KV rows %+v: want 2, the second with 9 heads and the same logits (max |Δ| ≤ 1e-3)", kv)
	}
}
