package bench

import (
	"strings"
	"testing"
)

// TestModernDecodeGoals: one goal row per backend and number of KV heads with a PyTorch row to
// compare with, met at ≥ 1× PyTorch's tokens/s.
func TestModernDecodeGoals(t *testing.T) {
	row := func(backend string, hkv int, tps float64) gqaDecodeResult {
		return gqaDecodeResult{Backend: backend, Model: "m", KVHeads: hkv, TokensPerS: tps}
	}
	rep := &benchReport{Modern: &modernReport{Decode: []gqaDecodeResult{
		row("torch cpu", 32, 40), row("torch cpu", 8, 60),
		row("go", 32, 50), row("go", 8, 30), row("xla:cpu", 1, 90), // no PyTorch row for 1 KV head
	}}}
	var lines []string
	for _, g := range evaluateGoals(rep) {
		lines = append(lines, g.Goal+": "+g.Measured+" "+map[bool]string{true: "met", false: "missed"}[g.Met])
	}
	want := strings.Join([]string{
		"go KV-cache decode step ≥ PyTorch's tokens/s (m, 32 KV heads): 1.25× (50.0 vs 40.0 tokens/s) met",
		"go KV-cache decode step ≥ PyTorch's tokens/s (m, 8 KV heads): 0.50× (30.0 vs 60.0 tokens/s) missed",
	}, "\n")
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("goals:\n%s\nwant:\n%s", got, want)
	}
}

// TestModernWindowGoals: at L 8192 on xla:cpu, one row per mask against PyTorch's fastest row
// for that mask; other backends and lengths give none.
func TestModernWindowGoals(t *testing.T) {
	row := func(backend, impl, mask string, l int, ms float64) windowResult {
		return windowResult{Backend: backend, Impl: impl, Shape: "s", L: l, Mask: mask, MedianMS: ms}
	}
	rep := &benchReport{Modern: &modernReport{Window: []windowResult{
		row("torch cpu", "SDPA is_causal", "causal", 8192, 370),
		row("torch cpu", "SDPA bool mask", "window 512", 8192, 900),
		row("torch cpu", "flex", "window 512", 8192, 50),
		row("xla:cpu", "mhalib FlashAttention", "causal", 8192, 296),
		row("xla:cpu", "mhalib FlashAttention", "window 512", 8192, 55),
		row("go", "mhalib FlashAttention", "causal", 4096, 100),
	}}}
	var lines []string
	for _, g := range evaluateGoals(rep) {
		lines = append(lines, g.Goal+": "+g.Measured+" "+map[bool]string{true: "met", false: "missed"}[g.Met])
	}
	want := strings.Join([]string{
		"xla:cpu FlashAttention causal at L 8192 ≤ PyTorch's fastest (s): 0.80× (296 ms vs SDPA is_causal 370 ms) met",
		"xla:cpu FlashAttention window 512 at L 8192 ≤ PyTorch's fastest (s): 1.10× (55.0 ms vs flex 50.0 ms) missed",
	}, "\n")
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("goals:\n%s\nwant:\n%s", got, want)
	}
}
