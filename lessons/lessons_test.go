package lessons

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/lessons/solutions"
)

// TestManifest fails when a file was changed without `go generate ./lessons`: then the pristine
// copies could not be told from edited ones.
func TestManifest(t *testing.T) {
	names := EmbeddedNames()
	if len(names) != len(manifest) {
		t.Errorf("%d files embedded, %d in Manifest: run `go generate ./lessons`", len(names), len(manifest))
	}
	for _, name := range names {
		data, genuine, err := Original(name)
		if err != nil {
			t.Errorf("%v (run `go generate ./lessons`)", err)
			continue
		}
		if !genuine {
			t.Errorf("%s: embedded content does not match Manifest: run `go generate ./lessons`", name)
		}
		disk, err := os.ReadFile(name)
		if err != nil || string(disk) != string(data) {
			t.Errorf("%s: the file on disk differs from the embedded one (%v)", name, err)
		}
	}
}

var runName = regexp.MustCompile(`t\.Run\("([^"]*)"|\{"(matches[^"]*)"`)

var item = regexp.MustCompile(`(?m)^[0-9]+\. `)

// questions counts the numbered items of a hint that ask something.
func questions(hint string) (items, asking int) {
	parts := item.Split(hint, -1)[1:]
	for _, p := range parts {
		if strings.Contains(p, "?") {
			asking++
		}
	}
	return len(parts), asking
}

// TestCatalogue checks that every exercise has its files, a stub with a TODO, a solution in
// solutions/files (not beside the stub) under the tag solution, and a hint of 2 or 3 questions.
func TestCatalogue(t *testing.T) {
	for i, e := range exercises {
		if e.Number != i+1 {
			t.Errorf("exercise %s has number %d, want %d (in order)", e.Dir, e.Number, i+1)
		}
		for _, name := range append([]string{"README.md", "hint.md", e.File, e.Grader}, e.Given...) {
			if _, ok := manifest[e.Path(name)]; !ok {
				t.Errorf("%s is not embedded (add it to the go:embed lines of lessons.go)", e.Path(name))
			}
		}
		read := func(name string) string {
			data, err := os.ReadFile(e.Path(name))
			if err != nil {
				t.Error(err)
			}
			return string(data)
		}
		if stub := read(e.File); strings.HasPrefix(stub, "//go:build") || !strings.Contains(stub, "// TODO") {
			t.Errorf("%s: a stub has a // TODO and no build constraint (the solutions live in solutions/files)", e.Path(e.File))
		}
		if _, err := os.Stat(e.Path(e.Solution)); err == nil {
			t.Errorf("%s: a solution beside its stub ships to every student: it belongs in solutions/files/%s", e.Path(e.Solution), e.Dir)
		}
		if sol, err := solutions.Source(e.Dir, e.Solution); err != nil || !strings.HasPrefix(string(sol), solutions.Constraint) {
			t.Errorf("solutions/files/%s: a solution exists and starts with %q (%v)", e.Path(e.Solution), solutions.Constraint, err)
		}
		if n, asking := questions(read("hint.md")); n < 2 || n > 3 || asking != n {
			t.Errorf("%s: %d numbered items, %d of them questions; want 2 or 3 questions", e.Path("hint.md"), n, asking)
		}
		// Check names are shown to students: t.Run turns spaces into underscores, and
		// mhalab lessons turns them back, so a name must not hold underscores of its own.
		for _, m := range runName.FindAllStringSubmatch(read(e.Grader), -1) {
			if name := m[1] + m[2]; strings.Contains(name, "_") {
				t.Errorf("%s: check name %q has an underscore", e.Path(e.Grader), name)
			}
		}
		readme := read("README.md")
		for _, part := range []string{"**Goal.**", "**Formula", "**Shapes.**", "**The grader checks**", e.Notebook} {
			if !strings.Contains(readme, part) {
				t.Errorf("%s lacks %q", e.Path("README.md"), part)
			}
		}
	}
}
