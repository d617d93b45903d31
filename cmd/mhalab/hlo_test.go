package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/testenv"
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
		testenv.RequireOrSkip(t, fmt.Sprintf("xla:cpu unavailable: %v", err))
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

func TestHLOCommandLine(t *testing.T) {
	xlaCPU(t)
	code, stdout, stderr := runCLI("hlo", "--stage", "optimized", "--stats")
	if code != 0 || !strings.Contains(stdout, "fusions") {
		t.Fatalf("mhalab hlo --stage optimized --stats: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

// A decoding step's projections (one row) keep their bias Add out of XLA's matrix-vector
// kernels: XLA's CPU compiler runs a product fused with its Add (kind=kOutput) on one thread
// (mhalib's applyLinear).
func TestHLOOneRowBiasNotFused(t *testing.T) {
	xlaCPU(t)
	code, stdout, stderr := runCLI("hlo", "--stage", "optimized", "--batch", "1", "--seq", "1", "--dmodel", "256", "--heads", "4")
	if code != 0 || !strings.Contains(stdout, " dot(") {
		t.Fatalf("mhalab hlo --stage optimized --batch 1 --seq 1: exit %d, want the optimised HLO with its products\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if n := strings.Count(stdout, "kind=kOutput"); n > 0 {
		t.Errorf("the optimised HLO of one row has %d output fusions (a product fused with its bias Add), want none:\n%s", n, stdout)
	}
}
