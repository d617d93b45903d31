package docker

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/testenv"
)

// These tests start the real servers on 127.0.0.1: JupyterLab through start-notebook.sh
// (notebook_security_test.py) and JupyterHub 5.5.4 from PyPI through start-hub.sh with throw-away
// accounts (hub_security_test.py). A missing prerequisite skips them, and fails them under CI=true.

// runSecurityScript runs a docker/*_security_test.py; its exit status 3 means a prerequisite is
// missing.
func runSecurityScript(t *testing.T, script string, args ...string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		prerequisite(t, "python3 not found")
	}
	cmd := exec.Command(python, append([]string{script}, args...)...)
	out, err := cmd.CombinedOutput()
	text := string(out)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(line, "FAIL") || strings.Contains(line, " passed, ") {
			t.Log(line)
		}
	}
	switch code {
	case 0:
	case 3:
		prerequisite(t, strings.TrimSpace(text))
	default:
		t.Fatalf("%s: exit %d\n%s", script, code, text)
	}
}

// prerequisite skips, or fails under CI.
func prerequisite(t *testing.T, why string) {
	t.Helper()
	testenv.RequireOrSkip(t, "a prerequisite is missing: "+why)
}

// TestNotebookGuardLive: every spelling that would turn the token or the XSRF check off — options
// in both forms, config files in every folder Jupyter reads, the environment — makes
// start-notebook.sh refuse to start; with a token the server answers 403 without it.
func TestNotebookGuardLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	runSecurityScript(t, "notebook_security_test.py")
}

// TestHubSecurityLive: the single-host hub as root — each student's server under their own uid,
// the hub's state, the students file and the TLS key out of their reach, HTTPS, the clear-text
// warning. Needs root, configurable-http-proxy and PyPI (docker/hub-venv.sh) the first time.
func TestHubSecurityLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if os.Geteuid() != 0 {
		prerequisite(t, "not root: hub_security_test.py creates throw-away accounts")
	}
	runSecurityScript(t, "hub_security_test.py")
}
