package smollm2

import (
	"fmt"
	"testing"

	"github.com/mhalab/mhalab/internal/testenv"
)

// modelFile is the installed model, or skips the test — except under CI (CI=true), which runs
// scripts/setup.sh: there a missing model is a failure.
func modelFile(t testing.TB) string {
	t.Helper()
	p, err := CheckDefault()
	if err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("SmolLM2-135M-Instruct not installed (scripts/setup.sh --only smollm2): %v", err))
	}
	return p
}
