package lessonrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/lessons"
)

// fakeStudent writes a student's copy of lessons/ with the given exercise folders (grader,
// README, hint and stub from the repository root) and then the files given (content "" deletes
// the file).
func fakeStudent(t *testing.T, root, dir string, exercises []lessons.Exercise, files map[string]string) {
	t.Helper()
	for _, e := range exercises {
		for _, f := range []string{e.File, e.Grader, "README.md", "hint.md"} {
			data, err := os.ReadFile(filepath.Join(root, "lessons", e.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := writeTestFile(filepath.Join(dir, e.Dir, f), string(data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := writeTestFile(p, content); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGradeMissingGradedFile: a student who deleted the file they were to edit is reported as
// "missing 05_sdpa/sdpa.go", not as code that does not compile (and nothing is compiled).
func TestGradeMissingGradedFile(t *testing.T) {
	root := copyRepo(t)
	ex5, _ := lessons.Lookup(5)
	student := filepath.Join(t.TempDir(), "erin")
	fakeStudent(t, root, student, []lessons.Exercise{ex5}, map[string]string{ex5.Path(ex5.File): ""})
	env := &runner{root: root, backend: "go", timeout: 10e9, compile: 60e9, stdout: os.Stdout, stderr: os.Stderr}
	g := env.gradeStudent(t.Context(), "erin", student, []lessons.Exercise{ex5})
	r := g.results[0]
	if r.status != "missing" || r.reason != "missing 05_sdpa/sdpa.go" {
		t.Errorf("deleted sdpa.go: status %q, reason %q; want missing, \"missing 05_sdpa/sdpa.go\"", r.status, r.reason)
	}
	if len(r.build) > 0 || strings.Contains(r.reason, "compile") {
		t.Errorf("something was compiled: %q", r.build)
	}
}
