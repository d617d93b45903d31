package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestProductsAddUp: the products of a case carry all of its counted FLOPs — the fused
// projection's product plus the rest is c.flops() of the case without a causal mask; the
// pure-Go form's projection is a third of the fused one (three are run) — and one case is kept
// per group.
func TestProductsAddUp(t *testing.T) {
	for _, c := range mhaCases(false) {
		sum := 0.0
		for _, p := range c.products(true) {
			sum += p.flops()
		}
		plain := c
		plain.Causal = false
		if want := plain.flops(); sum != want {
			t.Errorf("%s: the products' FLOPs add up to %g, want %g", c.Group, sum, want)
		}
		fused, three := c.products(true)[0].flops(), c.products(false)[0].flops()
		if 3*three != fused {
			t.Errorf("%s: the pure-Go projection %g FLOPs, want a third of %g", c.Group, three, fused)
		}
	}
	var groups []string
	for _, c := range productCases(mhaCases(false)) {
		groups = append(groups, c.Group)
	}
	if got := strings.Join(groups, ","); got != "seed003,long,llm" {
		t.Errorf("productCases: groups %s, want seed003,long,llm", got)
	}
	if got := (mhaCase{B: 32, L: 128, E: 512, H: 8}).products(true)[1].operands(); got != "[256 128 64] · [256 128 64]ᵀ" {
		t.Errorf("scores' operands %q", got)
	}
}

// TestBenchProductsQuick runs the suite's quick shapes on every test backend: a row per product,
// case and backend, each with a positive rate (and its share of the peak where one was
// measured), and the table in the report.
func TestBenchProductsQuick(t *testing.T) {
	var stdout, stderr bytes.Buffer
	backends := SplitList(testBackendList(t))
	rep, err := run(context.Background(), &stdout, &stderr, Config{Quick: true, Suites: []string{"products"}, Backends: backends})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if want := 4 * 3 * len(backends); len(rep.Products) != want {
		t.Fatalf("%d product rows, want %d (4 products × 3 cases × %d backends)", len(rep.Products), want, len(backends))
	}
	for _, r := range rep.Products {
		if r.Error != "" || !(r.GFLOPS > 0) || len(r.TimesMS) < 3 || (rep.Machine.PeakGFLOPS > 0 && !(r.PeakPercent > 0)) {
			t.Errorf("bad row %+v", r)
		}
	}
	for _, want := range []string{
		"## Matrix products of the forward pass, each alone, float32",
		"| seed003 | B4 L32 E64 h4 | scores q·kᵀ | [16 32 16] · [16 32 16]ᵀ | go |",
		"| long | B1 L512 E64 h4 | q, k, v projection (one of 3) | [512 64] · [64 64]ᵀ | go |",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
}
