package lessonrun

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/lessons/solutions"
)

// TestGradescopeAutograder builds the autograder zip for exercises 1 and 3, unpacks it into a
// fake /autograder, runs prepare.sh (setup.sh after installing Go: Go is on PATH here) and
// run_autograder on three submissions: a lessons/ folder (nested, as an unpacked archive) with
// exercise 1 solved and 3 the stub; linear.go alone; nothing usable. Each results.json must
// follow Gradescope's spec and score what it should.
func TestGradescopeAutograder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mhalab and grades: about a minute")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the autograder is built on linux/amd64")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	repo, err := FindRoot("")
	if err != nil {
		t.Fatal(err)
	}
	zipPath := filepath.Join(t.TempDir(), "autograder.zip")
	var stdout, stderr bytes.Buffer
	err = Run(context.Background(), "gradescope", nil, Options{Root: repo, Exercises: "1,3", Output: zipPath, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatalf("lessons gradescope: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	t.Logf("%s", stdout.String())

	// Unpack as Gradescope does: the zip in /autograder/source, run_autograder copied beside it.
	root := t.TempDir()
	source := filepath.Join(root, "source")
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	solution, err := solutions.Source(ex1.Dir, ex1.Solution)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "_solution.go") {
			t.Errorf("the zip holds a reference solution: %s", f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if f.Name == "mhalab" && bytes.Contains(data, solution) {
			t.Errorf("the mhalab in the zip embeds the reference solution of exercise 1")
		}
		p := filepath.Join(source, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, f.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"setup.sh", "prepare.sh", "run_autograder", "mhalab", "repo/go.mod", "repo/lessons/01_linear/linear_test.go", "repo/lessons/solutions/files/README.md", "repo/mhalib/sdpa.go"} {
		if st, err := os.Stat(filepath.Join(source, name)); err != nil {
			t.Errorf("the zip lacks %s", name)
		} else if !strings.HasPrefix(name, "repo/") && st.Mode().Perm()&0o100 == 0 {
			t.Errorf("%s is not executable in the zip", name)
		}
	}
	script, _ := os.ReadFile(filepath.Join(source, "run_autograder"))
	if err := os.WriteFile(filepath.Join(root, "run_autograder"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	runScript := func(name string) string {
		t.Helper()
		cmd := exec.Command(bash, name)
		cmd.Env = append(os.Environ(), "MHALAB_AUTOGRADER_ROOT="+root)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	if out := runScript(filepath.Join(source, "prepare.sh")); !strings.Contains(out, "mhalab autograder ready: exercises 1,3") {
		t.Errorf("prepare.sh:\n%s", out)
	}

	// grade puts a submission in /autograder/submission, runs run_autograder and returns the
	// tests of results.json by number.
	grade := func(files map[string]string) (map[string]any, map[string]map[string]any) {
		t.Helper()
		sub := filepath.Join(root, "submission")
		_ = os.RemoveAll(sub)
		_ = os.RemoveAll(filepath.Join(root, "results"))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for rel, content := range files {
			if err := writeTestFile(filepath.Join(sub, filepath.FromSlash(rel)), content); err != nil {
				t.Fatal(err)
			}
		}
		out := runScript(filepath.Join(root, "run_autograder"))
		data, err := os.ReadFile(filepath.Join(root, "results", "results.json"))
		if err != nil {
			t.Fatalf("no results.json: %v\n%s", err, out)
		}
		top, problems := validateResults(data)
		for _, p := range problems {
			t.Errorf("results.json: %s", p)
		}
		if top == nil {
			t.Fatalf("results.json:\n%s", data)
		}
		tests := map[string]map[string]any{}
		for _, raw := range top["tests"].([]any) {
			tt := raw.(map[string]any)
			tests[tt["number"].(string)] = tt
		}
		if t.Failed() {
			t.Logf("run_autograder:\n%s\nresults.json:\n%s", out, data)
		}
		return top, tests
	}

	// 1. The lessons folder, nested in the archive's top folder: exercise 1 solved, 3 the stub.
	stub3, _ := os.ReadFile(filepath.Join(source, "repo", "lessons", ex3.Dir, ex3.File))
	top, tests := grade(map[string]string{
		"mhalab/lessons/" + ex1.Path(ex1.File): solved(t, ex1),
		"mhalab/lessons/" + ex3.Path(ex3.File): string(stub3),
	})
	if top["score"].(float64) != 1 {
		t.Errorf("folder submission: score %v, want 1 (exercise 1 passes, 3 is the stub)", top["score"])
	}
	if tt := tests["1"]; tt == nil || tt["score"].(float64) != 1 || tt["max_score"].(float64) != 1 {
		t.Errorf("exercise 1: %v, want 1/1", tt)
	}
	if tt := tests["3"]; tt == nil || tt["score"].(float64) != 0 || !strings.Contains(tt["output"].(string), "checks pass") {
		t.Errorf("exercise 3: %v, want 0/1 and the checks summary", tt)
	}
	failedMessages := 0
	for number, tt := range tests {
		if strings.HasPrefix(number, "3.") && tt["status"] == "failed" {
			if out := tt["output"].(string); !strings.Contains(out, "lessons/03_heads/hint.md") || len(out) < 80 {
				t.Errorf("failed check %s (%s): output %q lacks the message or the hint", number, tt["name"], out)
			}
			failedMessages++
		}
	}
	if failedMessages == 0 || tests["1.1"] == nil {
		t.Errorf("no failing check of exercise 3 (or no check of exercise 1) in the tests: %v", tests)
	}

	// 2. linear.go alone: exercise 1 passes, 3 is missing its file (nothing compiled for it).
	top, tests = grade(map[string]string{ex1.File: solved(t, ex1)})
	if top["score"].(float64) != 1 || tests["3"] == nil || !strings.Contains(tests["3"]["output"].(string), "missing 03_heads/heads.go") {
		t.Errorf("linear.go alone: score %v, exercise 3 %v", top["score"], tests["3"])
	}
	if out := top["output"].(string); strings.Contains(out, "was missing: graded with the original") {
		t.Errorf("a loose file gets notes about the grader:\n%s", out)
	}

	// 3. Nothing to grade: score 0 and why.
	top, _ = grade(map[string]string{"notes.txt": "hello"})
	if top["score"].(float64) != 0 || !strings.Contains(top["output"].(string), "neither a lessons folder nor any of the files") {
		t.Errorf("empty submission: %v", top)
	}
	if data, _ := json.Marshal(top); !isGradescopeReport(data) {
		t.Errorf("the fallback results.json lacks the marker")
	}
}
