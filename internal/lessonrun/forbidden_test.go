package lessonrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/lessons"
)

// mhalibSDPA passes exercise 5 by calling the library the course builds: one line.
const mhalibSDPA = `package sdpa

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/mhalab/mhalab/mhalib"
)

func ScaledDotProductAttention(q, k, v *Node) (out, weights *Node) {
	return mhalib.ScaledDotProductAttention(q, k, v).DoneWithWeights()
}
`

// TestCheckRefusesMhalib: exercise 5 solved with one call to mhalib.ScaledDotProductAttention is
// refused, with a message naming the call and saying why, by check and by grade. (Before the
// graded files' imports were checked, both passed it: 6/6 checks.)
func TestCheckRefusesMhalib(t *testing.T) {
	root := copyRepo(t)
	ex5, _ := lessons.Lookup(5)
	if err := writeTestFile(filepath.Join(root, "lessons", ex5.Path(ex5.File)), mhalibSDPA); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(root, "check", "5")
	t.Logf("check 5:\n%s%s", out, stderr)
	for _, want := range []string{"sdpa.go:9", "mhalib.ScaledDotProductAttention", "write it yourself"} {
		if !strings.Contains(out, want) {
			t.Errorf("check 5 output lacks %q", want)
		}
	}
	if code != 1 || strings.Contains(out, "exercise 5 is done") {
		t.Errorf("check 5 with mhalib: exit %d, want 1 and no pass", code)
	}

	class := t.TempDir()
	student := filepath.Join(class, "eve")
	if err := writeTestFile(filepath.Join(student, ex5.Path(ex5.File)), mhalibSDPA); err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(t.TempDir(), "grades.csv")
	code, out, stderr = cli(root, "grade", "--exercises", "5", "-o", csvPath, student)
	t.Logf("grade:\n%s%s", out, stderr)
	if code != 0 || !strings.Contains(out, "| eve | ✗ | 0/1 |") || !strings.Contains(out, "mhalib.ScaledDotProductAttention") {
		t.Errorf("grade of a student who called mhalib: exit %d, want 0 with ✗ and the reason", code)
	}
	if data, err := os.ReadFile(csvPath); err != nil || !strings.Contains(string(data), "eve,fail,0,") {
		t.Errorf("CSV: %q, %v", data, err)
	}
}

// TestGradeRefusesMissingFolders: a student folder that does not exist, or holds none of the
// exercises, is an error naming it, before anything is graded or written. (Before, `grade
// /no/such/dir` graded a student named "dir" 0/10 and wrote grades.csv.)
func TestGradeRefusesMissingFolders(t *testing.T) {
	root := copyRepo(t)
	class := t.TempDir()
	ok := filepath.Join(class, "alice")
	if err := os.MkdirAll(filepath.Join(ok, "01_linear"), 0o755); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(class, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		dirs []string
		want string
	}{
		{"missing", []string{ok, "/no/such/dir"}, "/no/such/dir"},
		{"a file", []string{filepath.Join(root, "go.mod")}, "not a folder"},
		{"no exercise in it", []string{empty}, "none of the exercise folders"},
	} {
		t.Run(c.name, func(t *testing.T) {
			csvPath := filepath.Join(t.TempDir(), "grades.csv")
			code, out, stderr := cli(root, append([]string{"grade", "-o", csvPath}, c.dirs...)...)
			if code == 0 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("exit %d, stderr %q; want non-zero and one line with %q", code, stderr, c.want)
			}
			if strings.Contains(out, "| student |") {
				t.Errorf("graded anyway:\n%s", out)
			}
			if _, err := os.Stat(csvPath); err == nil {
				t.Errorf("wrote %s", csvPath)
			}
		})
	}
}
