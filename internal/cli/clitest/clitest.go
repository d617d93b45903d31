// Package clitest helps the tests of the commands (internal/commands/...) check a refusal.
package clitest

import (
	"errors"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/cli"
)

// Refused reports on t unless Run (of the options described by what) returned an error
// containing want, a *cli.UsageError exactly when usage, and printed nothing (output).
func Refused(t testing.TB, what string, err error, output, want string, usage bool) {
	t.Helper()
	var ue *cli.UsageError
	if err == nil || !strings.Contains(err.Error(), want) || errors.As(err, &ue) != usage || output != "" {
		t.Errorf("%s: error %v (usage error: %v), output %q; want %q (usage error: %v) and no output", what, err, ue != nil, output, want, usage)
	}
}
