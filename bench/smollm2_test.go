package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/models/smollm2"
)

func needSmolLM2(t *testing.T) {
	t.Helper()
	if _, err := smollm2.CheckDefault(); err != nil {
		if backendtest.InCI() {
			t.Fatalf("CI needs the model (scripts/setup.sh --only smollm2): %v", err)
		}
		t.Skipf("SmolLM2-135M-Instruct not installed (run scripts/setup.sh --only smollm2): %v", err)
	}
}

// TestBenchSmolLM2Quick: the suite runs on the pure-Go backend, reports prefill and decode
// rates, and measures the KV cache from its tensors: 9 key/value heads hold exactly 3× the bytes
// of 3, equal to mhalib.KVCacheBytes, with the same logits. A Python that does not exist becomes
// a note, not a failure.
func TestBenchSmolLM2Quick(t *testing.T) {
	needSmolLM2(t)
	var stdout, stderr bytes.Buffer
	cfg := Config{Quick: true, Suites: []string{"smollm2"}, Backends: []string{"go"}, Pythons: []string{"/nonexistent/python"}}
	if err := Run(&stdout, &stderr, cfg); err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"## Text generation, SmolLM2-135M-Instruct", "| mhalab models/smollm2 | go | 16 | 4 |",
		"PyTorch: /nonexistent/python", "## KV cache of SmolLM2-135M-Instruct", // 30 layers × (keys + values) × heads × 64 positions × 64 × 4 bytes
		"| 3 | 9 | go | 64 / 64 | 2949120 (", "| 9 | 9 | go | 64 / 64 | 8847360 ("} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestKVHeadsSameLogits: the 9-key/value-head model of the suite is the same model — its last
// logits after filling the cache differ from the 3-head model's by float rounding only.
func TestKVHeadsSameLogits(t *testing.T) {
	needSmolLM2(t)
	path, _ := smollm2.CheckDefault()
	m, err := smollm2.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		s := smollm2Config(true)
		kv := benchKVHeads(backend, "test", m, m.Tokenizer.Encode(smollm2Prompt)[:smollm2QuickTokens], s)
		if len(kv) != 2 || kv[0].Error != "" || kv[1].Error != "" {
			t.Fatalf("%+v", kv)
		}
		if kv[1].Bytes != 3*kv[0].Bytes || kv[0].Bytes != kv[0].Formula || kv[1].MaxLogitDiff > 1e-3 {
			t.Errorf("3 heads %d bytes (formula %d), 9 heads %d bytes (formula %d), max |Δlogit| %.2g", kv[0].Bytes, kv[0].Formula, kv[1].Bytes, kv[1].Formula, kv[1].MaxLogitDiff)
		}
		t.Logf("3 heads %d bytes, 9 heads %d bytes, max |Δlogit| %.2g", kv[0].Bytes, kv[1].Bytes, kv[1].MaxLogitDiff)
	})
}
