package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/internal/sandbox"
	"github.com/mhalab/mhalab/xla"
)

// hloDumpErr is what xla.EnableHLODump returned in TestMain.
var hloDumpErr error

func TestMain(m *testing.M) {
	// As mhalab's main does: this test binary is the sandbox's trampoline when lessons run.
	sandbox.Main()
	// As mhalab hlo does, before any XLA backend exists (XLA reads $XLA_FLAGS once). A fuzz
	// worker inherits its coordinator's flags and fails here: the HLO tests report it.
	hloDumpErr = xla.EnableHLODump()
	backendtest.Main(m, "cmd/mhalab")
}

// runCLI runs the command line in-process and returns its exit status, stdout and stderr.
func runCLI(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"nope"},
		{"backends", "--bogus"},
		{"backends", "extra"},
		{"demo", "--runs", "x"},
		{"demo", "--backend", "tpu"},
	} {
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.HasPrefix(stderr, "mhalab") || strings.Count(stderr, "\n") > 2 {
			t.Errorf("mhalab %q: exit %d, stderr %q; want exit 2 and at most two lines", args, code, stderr)
		}
	}
	if code, _, stderr := runCLI(); code != 2 || !strings.Contains(stderr, "usage: mhalab <command>") {
		t.Errorf("mhalab: exit %d, stderr %q; want exit 2 and the usage", code, stderr)
	}
	if code, stdout, _ := runCLI("help"); code != 0 || !strings.Contains(stdout, "backends") || !strings.Contains(stdout, "demo") {
		t.Errorf("mhalab help: exit %d, stdout %q", code, stdout)
	}
	if code, stdout, _ := runCLI("demo", "-h"); code != 0 || !strings.Contains(stdout, "--runs") {
		t.Errorf("mhalab demo -h: exit %d, stdout %q", code, stdout)
	}
}

func TestBackendsTable(t *testing.T) {
	code, stdout, stderr := runCLI("backends")
	if code != 0 {
		t.Fatalf("mhalab backends: exit %d, stderr %q", code, stderr)
	}
	for _, info := range xla.Available() {
		avail := "no"
		if info.Available {
			avail = "yes"
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(info.Name) + ` +` + avail + ` `).MatchString(stdout) {
			t.Errorf("no row %q with available=%s in:\n%s", info.Name, avail, stdout)
		}
	}
	if !strings.Contains(stdout, "default (no --backend): ") {
		t.Errorf("no default line in:\n%s", stdout)
	}
	t.Log("\n" + stdout)
}

func TestDemoCommandLine(t *testing.T) {
	code, stdout, stderr := runCLI("demo", "--backend", "go", "--batch", "1", "--seq", "4", "--dmodel", "8", "--heads", "2", "--runs", "1")
	if code != 0 || !strings.Contains(stdout, "backend:  go (requested)") || !strings.Contains(stdout, "(Float32)[1 4 8]") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
