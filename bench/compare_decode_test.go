package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchCompareDecode: the decoding rows of both runs, matched by backend, model and KV
// heads, with tokens/s and each run's own ratio to PyTorch's tokens/s.
func TestBenchCompareDecode(t *testing.T) {
	row := func(backend string, hkv int, tps float64) gqaDecodeResult {
		return gqaDecodeResult{Backend: backend, Model: "m", KVHeads: hkv, TokensPerS: tps}
	}
	old := &benchReport{Modern: &modernReport{Decode: []gqaDecodeResult{row("torch cpu", 8, 40), row("go", 8, 10)}}}
	cur := &benchReport{Modern: &modernReport{Decode: []gqaDecodeResult{row("torch cpu", 8, 50), row("go", 8, 60), row("go", 1, 5)}}}
	var out bytes.Buffer
	printDecodeComparison(&out, old, cur)
	for _, want := range []string{
		"| m | 8 | torch cpu | 40.0 | 50.0 | +25.0 % | 1.00× | 1.00× | +0.0 % |",
		"| m | 8 | go | 10.0 | 60.0 | +500.0 % | 0.25× | 1.20× | +380.0 % |",
		"| m | 1 | go | — | 5.0 | new | — | — | — |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	printDecodeComparison(&out, old, &benchReport{})
	if out.Len() != 0 {
		t.Errorf("a run without decoding rows printed %q", out.String())
	}
}
