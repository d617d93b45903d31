package smollm2

import (
	"os"
	"testing"
)

// modelFile is the installed model, or skips the test — except under CI (CI=true), which runs
// scripts/setup.sh: there a missing model is a failure.
func modelFile(t testing.TB) string {
	t.Helper()
	p, err := CheckDefault()
	if err != nil {
		if ci := os.Getenv("CI"); ci == "true" || ci == "1" {
			t.Fatalf("CI needs the model: %v", err)
		}
		t.Skip(err)
	}
	return p
}
