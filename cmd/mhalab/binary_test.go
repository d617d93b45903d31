package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mhalabBinary builds the mhalab command into t's temporary folder and returns its path.
func mhalabBinary(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mhalab")
	if out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

// runBinary runs the built command and returns its exit status, stdout and stderr.
func runBinary(t *testing.T, binary string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatal(err)
	return 0, "", ""
}

// The built command exits with the status main.go documents, on one line, before allocating:
// the old command panicked in makeslice (exit 2, a stack) or ran out of memory.
func TestBinaryBadInputs(t *testing.T) {
	binary := mhalabBinary(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"demo", "--batch", "3000000000", "--seq", "3000000000", "--backend", "go"}, 1, "mhalab demo: --batch 3000000000 --seq 3000000000 --dmodel 512 --heads 8: the forward pass would need"},
		{[]string{"hlo", "--batch", "3000000000", "--seq", "3000000000"}, 1, "mhalab hlo: --batch 3000000000 --seq 3000000000 --dmodel 32 --heads 4: compiling the graph would need"},
		{[]string{"demo", "--heads", "0"}, 1, "mhalab demo: --heads 0: want a positive number"},
		{[]string{"demo", "--runs", "x"}, 2, `mhalab demo: invalid value "x" for flag -runs`},
	} {
		code, stdout, stderr := runBinary(t, binary, c.args...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code != c.code || !strings.HasPrefix(lines[0], c.want) || len(lines) != c.code || stdout != "" ||
			strings.Contains(stderr, "goroutine ") {
			t.Errorf("mhalab %s: exit %d (want %d), stdout %q, stderr:\n%s\nwant %d line(s) starting %q",
				strings.Join(c.args, " "), code, c.code, stdout, stderr, c.code, c.want)
		}
	}
}

// TestBinaryBenchMemory runs the memory suite, whose measurements are child processes of the
// binary (`mhalab bench --child JSON`).
func TestBinaryBenchMemory(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, stdout, stderr := runBinary(t, mhalabBinary(t), "bench", "--quick", "--suites", "memory", "--backends", "go", "--json", jsonPath, "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Memory []struct {
			Kind       string `json:"kind"`
			PeakRSSKiB int64  `json:"peak_rss_kib"`
			Error      string `json:"error"`
		} `json:"memory"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Memory) != 2 {
		t.Fatalf("%d memory results, want 2 (plain, flash):\n%s", len(rep.Memory), stdout)
	}
	for _, m := range rep.Memory {
		if m.Error != "" || m.PeakRSSKiB <= 0 {
			t.Errorf("%s: peak %d KiB, error %q", m.Kind, m.PeakRSSKiB, m.Error)
		}
	}
	if !strings.Contains(stdout, "| go | plain attention, L = 512 |") {
		t.Errorf("no memory table row:\n%s", stdout)
	}
}
