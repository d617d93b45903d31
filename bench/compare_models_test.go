package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchCompareSmolLM2: generation rows matched by backend and implementation, with tokens/s
// and each run's own ratios to transformers and llama.cpp; nothing without current rows.
func TestBenchCompareSmolLM2(t *testing.T) {
	row := func(backend string, tps, vsTorch, vsLlama float64) smollm2Result {
		return smollm2Result{Backend: backend, Impl: "i", DecodeTokPerS: tps, DecodeVsTorch: vsTorch, DecodeVsLlama: vsLlama}
	}
	old := &benchReport{}
	old.SmolLM2.Gen = []smollm2Result{row("go", 36.4, 1.8, 0.35), {Backend: "xla:cpu", Impl: "i", Error: "boom"}}
	cur := &benchReport{}
	cur.SmolLM2.Gen = []smollm2Result{row("go", 72.8, 3.6, 0.7), row("xla:cpu", 28, 1.4, 0)}
	var out bytes.Buffer
	printSmolLM2Comparison(&out, old, cur)
	for _, want := range []string{
		"| go | i | 36.4 | 72.8 | +100.0 % | 1.80× | 3.60× | 0.35× | 0.70× |",
		"| xla:cpu | i | — | 28.0 | new | — | 1.40× | — | — |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	printSmolLM2Comparison(&out, old, &benchReport{})
	if out.Len() != 0 {
		t.Errorf("a run without smollm2 rows printed %q", out.String())
	}
}

// TestBenchCompareWindow: window rows matched by backend, implementation, length and mask, with
// each run's ratio to PyTorch's fastest row of the same length and mask.
func TestBenchCompareWindow(t *testing.T) {
	row := func(backend, impl, mask string, ms float64) windowResult {
		return windowResult{Backend: backend, Impl: impl, L: 8192, Mask: mask, MedianMS: ms}
	}
	old := &benchReport{Modern: &modernReport{Window: []windowResult{
		row("torch cpu", "flex", "window 512", 50), row("torch cpu", "sdpa", "window 512", 900), row("xla:cpu", "flash", "window 512", 60)}}}
	cur := &benchReport{Modern: &modernReport{Window: []windowResult{
		row("torch cpu", "flex", "window 512", 52), row("xla:cpu", "flash", "window 512", 39)}}}
	var out bytes.Buffer
	printWindowComparison(&out, old, cur)
	if want := "| flash | 8192 | window 512 | xla:cpu | 60.0 ms | 39.0 ms | −35.0 % | 1.20× | 0.75× |"; !strings.Contains(out.String(), want) {
		t.Errorf("comparison lacks %q:\n%s", want, out.String())
	}
}
