package main

import (
	"os"
	"strings"
	"testing"
)

// TestLessonsCommandLine: mistakes are usage errors (exit 2); a student folder that does not
// exist is one line and exit 1, with nothing graded and no grades.csv written. (Before, `mhalab
// lessons grade /no/such/dir` graded a student named "dir" 0/10 and wrote ./grades.csv.)
// Grading itself is tested in internal/lessonrun.
func TestLessonsCommandLine(t *testing.T) {
	root := "../.."
	for _, args := range [][]string{{"hint"}, {"hint", "99"}, {"check", "1", "2"}, {"bogus"}, {"check", "--backend", "tpu"}, {"grade"}, {"check", "--timeout", "0s"}, {"solution"}} {
		if code, _, stderr := runCLI(append(append([]string{"lessons"}, args...), "--root", root)...); code != 2 || !strings.Contains(stderr, `Run "mhalab lessons -h" for usage.`) {
			t.Errorf("lessons %q: exit %d (stderr %q), want 2 and the pointer to -h", args, code, stderr)
		}
	}
	if _, err := os.Stat("grades.csv"); err == nil {
		t.Fatal("grades.csv exists before the test: remove it")
	}
	code, stdout, stderr := runCLI("lessons", "grade", "/no/such/dir", "--root", root)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "/no/such/dir does not exist") || stdout != "" {
		t.Errorf("grade /no/such/dir: exit %d, stdout %q, stderr %q; want 1 and one line", code, stdout, stderr)
	}
	if _, err := os.Stat("grades.csv"); err == nil {
		os.Remove("grades.csv")
		t.Errorf("grade /no/such/dir wrote grades.csv")
	}
}
