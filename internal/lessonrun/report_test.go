package lessonrun

import (
	"bytes"
	"context"
	"errors"
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

// gradeWith runs `mhalab lessons grade` in-process with o (Root set to root) and returns the exit
// status mhalab would give, stdout and stderr (with the error).
func gradeWith(root string, o Options, dirs ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	o.Root, o.Stdout, o.Stderr = root, &stdout, &stderr
	err := Run(context.Background(), "grade", dirs, o)
	var ue *UsageError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ue):
		return 2, stdout.String(), stderr.String() + err.Error()
	default:
		return 1, stdout.String(), stderr.String() + err.Error()
	}
}

// TestGradeOutputsAreSafe: -o and --gradescope overwrite only a previous report of the grader,
// never a file in a student's folder (also through a symbolic link), and refuse before grading
// anything; a previous report is replaced, through a rename (no temporary file left behind).
func TestGradeOutputsAreSafe(t *testing.T) {
	root := copyRepo(t)
	class := t.TempDir()
	ann := filepath.Join(class, "ann")
	// ann deleted linear.go: grading her is quick (nothing to compile).
	fakeStudent(t, root, ann, []lessons.Exercise{ex1}, map[string]string{ex1.Path(ex1.File): "", ex1.Path("notes.go"): "package linear\n"})
	studentFile := filepath.Join(ann, ex1.Dir, "notes.go")
	out := t.TempDir()
	unrelated := filepath.Join(out, "grades.csv")
	if err := os.WriteFile(unrelated, []byte("name,mark\nann,12\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unrelatedJSON := filepath.Join(out, "results.json")
	if err := os.WriteFile(unrelatedJSON, []byte(`{"score": 3, "tests": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(out, "link.csv")
	if err := os.Symlink(filepath.Join(ann, ex1.Dir, "new.csv"), link); err != nil {
		t.Fatal(err)
	}
	linkToFolder := filepath.Join(out, "annlink")
	if err := os.Symlink(ann, linkToFolder); err != nil {
		t.Fatal(err)
	}
	fresh := func(name string) string { return filepath.Join(t.TempDir(), name) }
	for _, c := range []struct {
		name string
		o    Options
		dirs []string
		code int
		want string
	}{
		{"-o a student's file", Options{Output: studentFile}, []string{ann}, 1, "is inside the student folder " + ann},
		{"-o a new file in a student's folder", Options{Output: filepath.Join(ann, "grades.csv")}, []string{ann}, 1, "is inside the student folder"},
		{"-o an unrelated file", Options{Output: unrelated}, []string{ann}, 1, "-o " + unrelated + " exists and is not a CSV of mhalab lessons grade"},
		{"-o a symlink into a student's folder", Options{Output: link}, []string{ann}, 1, "-o " + link + " is inside the student folder"},
		{"-o through a linked folder", Options{Output: filepath.Join(linkToFolder, "g.csv")}, []string{ann}, 1, "is inside the student folder"},
		{"-o in a folder that does not exist", Options{Output: "/no/such/dir/g.csv"}, []string{ann}, 1, "its folder /no/such/dir does not exist"},
		{"-o a folder", Options{Output: out}, []string{ann}, 1, "is a folder"},
		{"--gradescope an unrelated file", Options{Output: fresh("g.csv"), Gradescope: unrelatedJSON}, []string{ann}, 1, "--gradescope " + unrelatedJSON + " exists and is not a results.json of mhalab lessons grade"},
		{"--gradescope a student's file", Options{Output: fresh("g.csv"), Gradescope: studentFile}, []string{ann}, 1, "is inside the student folder"},
		{"--gradescope the CSV", Options{Output: filepath.Join(out, "same"), Gradescope: filepath.Join(out, "same")}, []string{ann}, 1, "is the same file as -o"},
		{"--gradescope two folders", Options{Output: fresh("g.csv"), Gradescope: fresh("r.json")}, []string{ann, ann}, 2, "--gradescope grades one submission: give exactly one folder (got 2)"},
		{"--scoring unknown", Options{Output: fresh("g.csv"), Gradescope: fresh("r.json"), Scoring: "half"}, []string{ann}, 2, `--scoring "half"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _ := os.ReadFile(studentFile)
			code, stdout, stderr := gradeWith(root, c.o, c.dirs...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.want)
			}
			if stdout != "" || strings.Contains(stderr, "grading ") {
				t.Errorf("graded before refusing: stdout %q, stderr %q", stdout, stderr)
			}
			if after, _ := os.ReadFile(studentFile); !bytes.Equal(before, after) {
				t.Errorf("the student's file changed: %q", after)
			}
		})
	}
	if data, _ := os.ReadFile(unrelated); string(data) != "name,mark\nann,12\n" {
		t.Errorf("the unrelated CSV changed: %q", data)
	}
	if _, err := os.Lstat(filepath.Join(ann, ex1.Dir, "new.csv")); err == nil {
		t.Errorf("a file was written into the student's folder through the symlink")
	}

	// Previous reports are overwritten fine, atomically.
	reports := t.TempDir()
	csvPath, jsonPath := filepath.Join(reports, "grades.csv"), filepath.Join(reports, "results.json")
	for run := 1; run <= 2; run++ {
		code, stdout, stderr := gradeWith(root, Options{Output: csvPath, Gradescope: jsonPath, Exercises: "1"}, ann)
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", run, code, stdout, stderr)
		}
		if !strings.Contains(stdout, "| ann | ✗ | 0/1 |") || !strings.Contains(stdout, "missing 01_linear/linear.go") {
			t.Errorf("run %d: report:\n%s", run, stdout)
		}
	}
	data, _ := os.ReadFile(csvPath)
	if !isGradeCSV(data) || !strings.Contains(string(data), "missing 01_linear/linear.go") {
		t.Errorf("grades.csv:\n%s", data)
	}
	data, _ = os.ReadFile(jsonPath)
	if !isGradescopeReport(data) || !strings.Contains(string(data), "missing 01_linear/linear.go") {
		t.Errorf("results.json:\n%s", data)
	}
	entries, _ := os.ReadDir(reports)
	if len(entries) != 2 {
		t.Errorf("the reports' folder holds %d files, want 2 (temporary files left?)", len(entries))
	}
}
