package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/xla"
)

// xlaCPU returns the XLA CPU backend, or skips the test when its plugin is missing (outside CI).
func xlaCPU(t *testing.T) backends.Backend {
	t.Helper()
	if hloDumpErr != nil {
		t.Fatal(hloDumpErr)
	}
	b, err := backendtest.Get(xla.SpecCPU)
	if err != nil {
		if backendtest.InCI() {
			t.Fatalf("xla:cpu is required in CI: %v", err)
		}
		t.Skipf("xla:cpu unavailable: %v", err)
	}
	return b
}

func TestHLOUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"hlo", "--stage", "llvm"},
		{"hlo", "--backend", "go"},
		{"hlo", "--backend", "tpu"},
	} {
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, `Run "mhalab hlo -h" for usage.`) {
			t.Errorf("mhalab %q: exit %d, stderr %q; want exit 2 and the pointer to -h", args, code, stderr)
		}
	}
}

// The StableHLO of MHA has one dot_general per projection (q, k, v, out) plus two for
// attention (q·kᵀ, weights·v): 6. mhalib cuts a fused in_proj_weight into Wq, Wk, Wv before
// multiplying, so the fused layout has the same 6.
func TestHLOStableHLOHasADotGeneralPerProjection(t *testing.T) {
	b := xlaCPU(t)
	for _, tc := range []struct {
		separate bool
		want     int
	}{{false, 6}, {true, 6}} {
		var out, summary bytes.Buffer
		cfg := hloConfig{batch: 2, seq: 8, dModel: 32, heads: 4, separate: tc.separate}
		if err := printHLO(&out, &summary, b, cfg, stageStableHLO, false); err != nil {
			t.Fatal(err)
		}
		program := out.String()
		if got := strings.Count(program, `"stablehlo.dot_general"(`); got != tc.want {
			t.Errorf("separate=%v: %d stablehlo.dot_general, want %d\n%s", tc.separate, got, tc.want, summary.String())
		}
		for _, want := range []string{"func.func @main(", "tensor<2x8x32xf32>", "MultiHeadAttention"} {
			if !strings.Contains(program, want) {
				t.Errorf("separate=%v: StableHLO does not contain %q", tc.separate, want)
			}
		}
		t.Logf("separate=%v: %s", tc.separate, summary.String())
	}
}

func TestHLOOptimizedCountsFusions(t *testing.T) {
	b := xlaCPU(t)
	var out, summary bytes.Buffer
	cfg := hloConfig{batch: 2, seq: 8, dModel: 32, heads: 4, causal: true}
	if err := printHLO(&out, &summary, b, cfg, stageOptimized, false); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "HloModule mhalab_hlo_dump_") || !strings.Contains(out.String(), "fusion(") {
		t.Errorf("optimised HLO does not start with its module or has no fusion:\n%.500s", out.String())
	}
	if !strings.Contains(summary.String(), "fusions") {
		t.Errorf("summary %q has no fusion count", summary.String())
	}
	out.Reset()
	summary.Reset()
	if err := printHLO(&out, &summary, b, cfg, stageHLO, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "HLO after optimisation:") || summary.Len() == 0 {
		t.Errorf("--stats output %q, summary %q", out.String(), summary.String())
	}
	t.Log("\n" + out.String())
}

func TestHLOCommandLine(t *testing.T) {
	xlaCPU(t)
	code, stdout, stderr := runCLI("hlo", "--stage", "optimized", "--stats")
	if code != 0 || !strings.Contains(stdout, "fusions") {
		t.Fatalf("mhalab hlo --stage optimized --stats: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}
