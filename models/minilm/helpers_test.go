package minilm

import (
	"fmt"
	"testing"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/testenv"
)

// modelDir returns the installed model's folder, or skips the test with the reason when the
// setup step has not run — except under CI (CI=true), which runs scripts/setup.sh: there a
// missing or wrong model is a failure.
func modelDir(t testing.TB) string {
	t.Helper()
	dir, err := DefaultDir()
	if err == nil {
		err = CheckFiles(dir)
	}
	if err != nil {
		testenv.RequireOrSkip(t, fmt.Sprintf("all-MiniLM-L6-v2 not installed (run scripts/setup.sh --only minilm): %v", err))
	}
	return dir
}

func TestMain(m *testing.M) { backendtest.Main(m, "models/minilm") }
