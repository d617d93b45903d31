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
