package lessonrun

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mhalab/mhalab/lessons"
	"github.com/mhalab/mhalab/lessons/solutions"
)

// copyRepo makes a copy of what the lessons need to build (go.mod, go.sum, lessons/, and the
// non-test Go files of mhalib and torchio) in a temporary folder and returns its root, so that
// the tests can break exercises without touching the repository.
func copyRepo(t *testing.T) string {
	t.Helper()
	src, err := FindRoot("")
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	copyTree := func(rel string, keep func(name string) bool) {
		err := filepath.WalkDir(filepath.Join(src, rel), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if strings.HasPrefix(name, ".") && p != filepath.Join(src, rel) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !keep(name) {
				return nil
			}
			r, _ := filepath.Rel(src, p)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return writeTestFile(filepath.Join(dst, r), string(data))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The package's build sources: Go files (not tests) and assembly (fastgo's prefetch_simd_amd64.s;
	// without it the copy's fastgo does not compile and every grader fails to build).
	goSource := func(name string) bool {
		switch filepath.Ext(name) {
		case ".go":
			return !strings.HasSuffix(name, "_test.go")
		case ".s", ".h":
			return true
		}
		return false
	}
	copyTree("go.mod", func(string) bool { return true })
	copyTree("go.sum", func(string) bool { return true })
	// Every package of this module that the lessons import (mhalib, torchio, fastgo, …), as
	// go list sees it, so that a new import of the graders does not break the copy.
	list := exec.Command("go", "list", "-tags", "lessons", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", "./lessons/...")
	list.Dir = src
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list the lessons' packages: %v", err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(src, dir)
		if err != nil || rel == "lessons" || strings.HasPrefix(rel, "lessons"+string(filepath.Separator)) {
			continue
		}
		copyTree(rel, goSource)
	}
	copyTree("lessons", func(name string) bool { return !strings.HasSuffix(name, ".test") })
	return dst
}

func writeTestFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// solved returns the reference solution of e as a student would hand it in: in the stub's file,
// without the build constraint.
func solved(t *testing.T, e lessons.Exercise) string {
	t.Helper()
	src, err := solutions.Source(e.Dir, e.Solution)
	if err != nil {
		t.Fatal(err)
	}
	return string(solutions.AsStudentFile(src))
}

// testStdin is reset's confirmation in cli.
var testStdin io.Reader = strings.NewReader("")

// cli runs `mhalab lessons ARGS --root root` in-process, with the flags of mhalab lessons that
// the tests use, and returns the exit status mhalab would give (2 for a usage error), stdout and
// stderr.
func cli(root string, args ...string) (int, string, string) {
	o := Options{Root: root, Stdin: testStdin}
	var stdout, stderr bytes.Buffer
	o.Stdout, o.Stderr = &stdout, &stderr
	sub, args := args[0], args[1:]
	var pos []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--timeout", "--exercises", "-o", "--backend":
			v := args[i+1]
			i++
			switch a {
			case "--timeout":
				d, err := time.ParseDuration(v)
				if err != nil {
					panic(err)
				}
				o.Timeout = d
			case "--exercises":
				o.Exercises = v
			case "-o":
				o.Output = v
			case "--backend":
				o.Backend = v
			}
		case "-y":
			o.Yes = true
		case "--no-sandbox":
			o.NoSandbox = true
		default:
			pos = append(pos, a)
		}
	}
	err := Run(context.Background(), sub, pos, o)
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

var (
	ex1, _ = lessons.Lookup(1)
	ex2, _ = lessons.Lookup(2)
	ex3, _ = lessons.Lookup(3)
)

const hangingLinear = `package linear

import . "github.com/gomlx/gomlx/pkg/core/graph"

func Linear(x, weight, bias *Node) *Node {
	for {
	}
}
`

func TestListHintAndUsage(t *testing.T) {
	root := copyRepo(t)
	code, out, _ := cli(root, "list")
	if code != 0 || !strings.Contains(out, "0 of 14 exercises done") || !strings.Contains(out, "← next") ||
		!strings.Contains(out, "Next: exercise 1") || !strings.Contains(out, "01_linear") || !strings.Contains(out, "10_statedict") {
		t.Errorf("lessons list: exit %d, output:\n%s", code, out)
	}
	if code, out, _ := cli(root, "hint", "3"); code != 0 || !strings.Contains(out, "TransposeAllDims") || !strings.Contains(out, "03_heads/README.md") {
		t.Errorf("lessons hint 3: exit %d, output:\n%s", code, out)
	}
	for _, args := range [][]string{{"hint"}, {"hint", "99"}, {"check", "1", "2"}, {"bogus"}, {"check", "--backend", "tpu"}, {"grade"}} {
		if code, _, stderr := cli(root, args...); code != 2 {
			t.Errorf("lessons %q: exit %d (stderr %q), want 2", args, code, stderr)
		}
	}
	if code, _, stderr := cli(t.TempDir(), "list"); code != 1 || !strings.Contains(stderr, "not the mhalab repository") {
		t.Errorf("lessons --root elsewhere: exit %d, stderr %q", code, stderr)
	}
}

// TestLessonsCheckBadInputs: a file that does not compile, that panics or loops forever, and a
// deleted or edited grader each give a student-facing message, and never a pass.
func TestCheckBadInputs(t *testing.T) {
	root := copyRepo(t)
	stub := filepath.Join(root, "lessons", ex1.Dir, ex1.File)
	grader := filepath.Join(root, "lessons", ex1.Dir, ex1.Grader)
	cases := []struct {
		name, code string
		prepare    func()
		timeout    string
		want       []string
	}{
		{name: "stub", want: []string{"✗ output shape", "expected shape [2 3 4], got [2 3 5]", "0/6 checks pass", "mhalab lessons hint 1"}},
		{name: "does not compile", code: "package linear\n\nfunc Linear( {\n", want: []string{"does not compile", "linear.go:3"}},
		{name: "panics", code: strings.Replace(hangingLinear, "for {\n\t}", `panic("no idea")`, 1), want: []string{"panicked: no idea", "✗ output shape"}},
		{name: "loops forever", code: hangingLinear, timeout: "3s", want: []string{"time limit (3s)", "infinite loop"}},
		{name: "deleted grader", prepare: func() { os.Remove(grader) }, want: []string{"linear_test.go was missing: restored it", "0/6 checks pass"}},
		{name: "edited grader", prepare: func() {
			_ = os.WriteFile(grader, []byte("package linear\n\nimport \"testing\"\n\nfunc TestLesson(t *testing.T) {}\n"), 0o644)
		}, want: []string{"linear_test.go was changed: restored it", "0/6 checks pass"}},
		{name: "extra test file", prepare: func() {
			_ = writeTestFile(filepath.Join(root, "lessons", ex1.Dir, "mine_test.go"), "package linear\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { os.Exit(0) }\n")
		}, want: []string{"ignoring lessons/01_linear/mine_test.go", "0/6 checks pass"}},
	}
	original, err := os.ReadFile(stub)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code := string(original)
			if c.code != "" {
				code = c.code
			}
			if err := os.WriteFile(stub, []byte(code), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.prepare != nil {
				c.prepare()
			}
			args := []string{"check", "1"}
			if c.timeout != "" {
				args = append(args, "--timeout", c.timeout)
			}
			exit, out, stderr := cli(root, args...)
			if exit != 1 || !strings.Contains(stderr, "exercise 1 is not done yet") {
				t.Errorf("exit %d, stderr %q; want 1 and 'not done yet'", exit, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if data, _ := os.ReadFile(grader); !bytes.Equal(data, pristine(t, ex1.Path(ex1.Grader))) {
		t.Errorf("the grader was not restored")
	}
	os.Remove(filepath.Join(root, "lessons", ex1.Dir, "mine_test.go"))
}

func pristine(t *testing.T, name string) []byte {
	t.Helper()
	data, genuine, err := lessons.Original(name)
	if err != nil || !genuine {
		t.Fatalf("lessons.Original(%s): genuine %v, %v", name, genuine, err)
	}
	return data
}

// TestLessonsProgressAndReset: a solved exercise shows ✓ and the next one becomes current;
// reset asks, restores the stub, and forgets the progress; deleting the state file starts over.
func TestProgressAndReset(t *testing.T) {
	root := copyRepo(t)
	stub := filepath.Join(root, "lessons", ex1.Dir, ex1.File)
	if err := os.WriteFile(stub, []byte(solved(t, ex1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := cli(root, "check")
	if code != 0 || !strings.Contains(out, "All 6 checks pass: exercise 1 is done") || !strings.Contains(out, "Next: exercise 2") {
		t.Fatalf("check of a solved exercise 1: exit %d, output:\n%s", code, out)
	}
	if !strings.Contains(out, "mhalab lessons solution 1") {
		t.Errorf("a pass does not point at the reference solution:\n%s", out)
	}
	// The solution of a passed exercise is shown, without its build constraint; not the others'.
	if code, out, _ := cli(root, "solution", "1"); code != 0 || !strings.Contains(out, "func Linear(") || strings.Contains(out, "//go:build") {
		t.Errorf("solution 1 after a pass: exit %d, output:\n%s", code, out)
	}
	if code, out, stderr := cli(root, "solution", "2"); code != 1 || strings.Contains(out, "func ") || !strings.Contains(stderr, "exercise 2 is not done yet") {
		t.Errorf("solution 2 before a pass: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	_, out, _ = cli(root, "list")
	if !strings.Contains(out, "1 of 14 exercises done") || !strings.Contains(out, "Next: exercise 2") {
		t.Errorf("list after solving 1:\n%s", out)
	}

	testStdin = strings.NewReader("n\n")
	defer func() { testStdin = strings.NewReader("") }()
	if code, out, _ := cli(root, "reset", "1"); code != 0 || !strings.Contains(out, "Nothing changed") {
		t.Errorf("reset answered no: exit %d, output:\n%s", code, out)
	}
	if data, _ := os.ReadFile(stub); bytes.Equal(data, pristine(t, ex1.Path(ex1.File))) {
		t.Errorf("reset answered no changed the file")
	}
	testStdin = strings.NewReader("y\n")
	if code, out, _ := cli(root, "reset", "1"); code != 0 || !strings.Contains(out, "original stub again") {
		t.Errorf("reset answered yes: exit %d, output:\n%s", code, out)
	}
	if data, _ := os.ReadFile(stub); !bytes.Equal(data, pristine(t, ex1.Path(ex1.File))) {
		t.Errorf("reset did not restore the stub")
	}
	if _, out, _ := cli(root, "list"); !strings.Contains(out, "0 of 14 exercises done") {
		t.Errorf("list after reset:\n%s", out)
	}

	// A corrupt state file is a fresh start, and so is a deleted one.
	state := filepath.Join(root, "lessons", ProgressFile)
	_ = os.WriteFile(state, []byte("{not json"), 0o644)
	if code, out, stderr := cli(root, "list"); code != 0 || !strings.Contains(out, "0 of 14") || !strings.Contains(stderr, "unreadable") {
		t.Errorf("list with a corrupt state: exit %d\n%s\n%s", code, out, stderr)
	}
	_ = os.Remove(state)
	if code, out, _ := cli(root, "list"); code != 0 || !strings.Contains(out, "0 of 14") {
		t.Errorf("list without a state file: exit %d\n%s", code, out)
	}
}

// buffer is a bytes.Buffer safe for one writer and one reader.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLessonsWatch: watch checks the current exercise, checks it again when its file is saved,
// moves on when it passes, and stops when its context ends (Ctrl-C).
func TestWatch(t *testing.T) {
	root := copyRepo(t)
	var out buffer
	env := &runner{root: root, backend: "go", timeout: time.Minute, compile: 5 * time.Minute, stdout: &out, stderr: &out}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- env.watch(ctx, 100*time.Millisecond) }()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for !strings.Contains(out.String(), what) {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("watch never printed %q; output:\n%s", what, out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("Watching lessons/01_linear/")
	if err := os.WriteFile(filepath.Join(root, "lessons", ex1.Dir, ex1.File), []byte(solved(t, ex1)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("exercise 1 is done")
	waitFor("on to exercise 2")
	waitFor("Watching lessons/02_xavier/")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("watch: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("watch did not stop when its context ended")
	}
	if !strings.Contains(out.String(), "watch stopped") {
		t.Errorf("no 'watch stopped' at the end:\n%s", out.String())
	}
}

// TestLessonsGradeFakeStudents grades four fake students on exercises 1 and 3: one correct, one
// partial, one whose code does not compile, one whose code hangs (and who deleted a grader).
func TestGradeFakeStudents(t *testing.T) {
	root := copyRepo(t)
	class := t.TempDir()
	student := func(name string, files map[string]string) {
		for _, e := range []lessons.Exercise{ex1, ex2, ex3} {
			for _, f := range []string{e.File, e.Grader, "README.md", "hint.md"} {
				data, err := os.ReadFile(filepath.Join(root, "lessons", e.Dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := writeTestFile(filepath.Join(class, name, e.Dir, f), string(data)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for rel, content := range files {
			if content == "" {
				_ = os.Remove(filepath.Join(class, name, rel))
				continue
			}
			if err := writeTestFile(filepath.Join(class, name, rel), content); err != nil {
				t.Fatal(err)
			}
		}
	}
	student("alice", map[string]string{ex1.Path(ex1.File): solved(t, ex1), ex3.Path(ex3.File): solved(t, ex3)})
	student("bob", map[string]string{ex1.Path(ex1.File): solved(t, ex1)})
	student("carol", map[string]string{ex1.Path(ex1.File): "package linear\n\nfunc Linear(x {\n", ex3.Path(ex3.File): solved(t, ex3)})
	student("dave", map[string]string{ex1.Path(ex1.File): hangingLinear, ex3.Path(ex3.File): solved(t, ex3), ex3.Path(ex3.Grader): ""})
	csvPath := filepath.Join(t.TempDir(), "grades.csv")
	args := []string{"grade", "--exercises", "1,3", "--timeout", "4s", "-o", csvPath}
	for _, s := range []string{"alice", "bob", "carol", "dave"} {
		args = append(args, filepath.Join(class, s))
	}
	code, out, stderr := cli(root, args...)
	t.Logf("mhalab lessons grade:\n%s\n%s", out, stderr)
	if code != 0 {
		t.Fatalf("grade: exit %d", code)
	}
	for _, want := range []string{
		"| student | 01 | 03 | total |",
		"| alice | ✓ | ✓ | 2/2 |",
		"| bob | ✓ | ✗ | 1/2 |",
		"| carol | ✗ | ✓ | 1/2 |",
		"| dave | ✗ | ✓ | 1/2 |",
		"- 01_linear: does not compile: 01_linear/linear.go:3:",
		"- 01_linear: time limit:",
		"- note: 03_heads/heads_test.go was missing: graded with the original",
		// Per student, which checks failed.
		"### bob: 1/2",
		"- 03_heads: fail, 1/6 checks pass; failed checks:",
		"heads match PyTorch",
		"### alice: 2/2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("grade output lacks %q", want)
		}
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"student", "01_linear", "03_heads", "total"},
		{"alice", "pass", "pass", "2"},
		{"bob", "pass", "fail", "1"},
		{"carol", "fail", "pass", "1"},
		{"dave", "fail", "pass", "1"},
	}
	if len(rows) != len(want) {
		t.Fatalf("CSV has %d rows, want %d: %q", len(rows), len(want), rows)
	}
	for i, w := range want {
		if got := rows[i][:4]; strings.Join(got, ",") != strings.Join(w, ",") {
			t.Errorf("CSV row %d: %q, want %q", i, got, w)
		}
	}
	if notes := rows[4][4]; !strings.Contains(notes, "time limit") || !strings.Contains(notes, "heads_test.go was missing") {
		t.Errorf("dave's notes: %q", notes)
	}
	if rows[0][5] != "failed checks" || !strings.Contains(rows[2][5], "03_heads: ") || !strings.Contains(rows[2][5], "heads match PyTorch") || rows[1][5] != "" {
		t.Errorf("CSV failed checks: header %q, alice %q, bob %q", rows[0][5], rows[1][5], rows[2][5])
	}
	// Grading changed nothing in the teacher's exercises.
	if data, _ := os.ReadFile(filepath.Join(root, "lessons", ex1.Dir, ex1.File)); !bytes.Equal(data, pristine(t, ex1.Path(ex1.File))) {
		t.Errorf("grade modified the repository's stub")
	}
}

func TestCleanOutputAndClassify(t *testing.T) {
	c := &checkResult{}
	got := c.cleanOutput("=== RUN   TestLesson/x\n    linear_test.go:42: expected shape [2 3 4], got [2 3 5]\n          The weight is [out, in]\n    grader.go:95: Stuck? Run `mhalab lessons hint 1` (or read lessons/01_linear/hint.md).\n--- FAIL: TestLesson/x (0.00s)\n")
	want := []string{"expected shape [2 3 4], got [2 3 5]", "  The weight is [out, in]"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("cleanOutput: %q, want %q", got, want)
	}
	r := &result{exercise: ex1, status: "fail", checks: []*checkResult{{name: "a", passed: true}, {name: "b"}}}
	r.classify(time.Second)
	if r.status != "fail" || r.reason != "1/2 checks pass; first failing: b" {
		t.Errorf("classify: %q %q", r.status, r.reason)
	}
	r = &result{exercise: ex1, status: "pass"}
	r.classify(time.Second)
	if r.passed() {
		t.Errorf("a package that ran no check passed")
	}
}
