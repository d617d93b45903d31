package lessonrun

import (
	"os"
	"testing"

	"github.com/mhalab/mhalab/internal/sandbox"
)

// TestMain lets this test binary be the sandbox's trampoline (internal/sandbox re-executes it).
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}
