package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// The arrows of ARCHITECTURE.md, checked on the module's packages as `go list` sees them
// (non-test builds: tests may import test helpers such as internal/backendtest).

const (
	module = "github.com/mhalab/mhalab"
	gomlx  = "github.com/gomlx/gomlx"
)

// layer is a package's place in the architecture.
type layer int

const (
	core        layer = iota // mhalib and its sub-packages: GoMLX and the standard library only
	library                  // reusable packages: import core and other libraries
	application              // parity, bench, notebooks, lessons, runners: import core and libraries
	command                  // package main (cmd/... and the commands listed in commands): imports anything, imported by nothing
)

func (l layer) String() string {
	return [...]string{"core", "library", "application", "command"}[l]
}

// libraries are the module's library packages (a path and everything under it). A package not
// listed here, in mhalib/ or in cmd/ is an application: a new package is an application until it
// is listed here, so a library cannot start depending on it unnoticed.
var libraries = []string{"torchio", "xla", "models", "internal/backendtest", "internal/testenv", "internal/tensortest", "internal/atomicfile", "internal/textinput", "internal/cpupeak", "fastgo"}

// commands are the module's package main trees besides cmd/ (TestCommandsArePackageMain checks
// both ways): tools that `go run` builds, imported by nothing.
var commands = []string{"cmd", "internal/plugincheck", "lessons/internal/genmanifest", "notebooks/induction/fixtures", "examples/quickstart", "docs/internal/gen"}

// within reports whether rel (a path relative to the module) is dir or under it.
func within(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

func layerOf(rel string) layer {
	if within(rel, "mhalib") {
		return core
	}
	for _, cmd := range commands {
		if within(rel, cmd) {
			return command
		}
	}
	for _, lib := range libraries {
		if within(rel, lib) {
			return library
		}
	}
	return application
}

// isCommand reports whether rel is one of mhalab's commands: a package under internal/commands
// (an application, run only by cmd/mhalab), not their shared helpers in
// internal/commands/internal.
func isCommand(rel string) bool {
	return strings.HasPrefix(rel, "internal/commands/") && !within(rel, "internal/commands/internal")
}

// isLessonTooling reports whether rel may import lessons/...: the lessons themselves and their
// tooling, a package with a path element starting with "lesson" (internal/lessonrun, the runner
// the command calls).
func isLessonTooling(rel string) bool {
	for _, elem := range strings.Split(rel, "/") {
		if strings.HasPrefix(elem, "lesson") {
			return true
		}
	}
	return false
}

// arrowError returns why the module package from may not import the module package to, or "".
func arrowError(from, to string) string {
	lf, lt := layerOf(from), layerOf(to)
	switch {
	case from == "mhalib" && to != "mhalib" && within(to, "mhalib"):
		return "mhalib imports none of its sub-packages (they import mhalib: decode, train, inspect, kvcatalog, dotgrad, mhatest)"
	case lf == core && from != "mhalib" && lt == core && to != "mhalib" && !within(to, from) && !within(from, to):
		return "an mhalib sub-package imports mhalib and GoMLX only, not another sub-package"
	case within(to, from) || within(from, to):
		return "" // a package tree's own parts
	case lt == command:
		return "nothing imports cmd/: the command only parses flags and calls packages"
	case isCommand(to) && lf != command:
		return "a command (internal/commands/...) is imported only by cmd/mhalab's table of commands; what commands share lives in internal/cli or internal/commands/internal"
	case within(to, "notebooks") && !within(from, "notebooks"):
		return "notebooks/ is imported only by the notebooks"
	case within(to, "lessons") && !isLessonTooling(from):
		return "lessons/ is imported only by the lessons and their tooling (internal/lessonrun)"
	case lf == core:
		return "mhalib imports only GoMLX and the standard library, no other package of the module"
	case lf == library && lt == application:
		return fmt.Sprintf("a library (%v) does not import an application package (%v); list %s in libraries if it is one", lf, lt, to)
	}
	return ""
}

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath string
	Name       string   // the package clause ("main" for a program)
	Dir        string   // its folder
	GoFiles    []string // its non-test Go files, in Dir
	Standard   bool
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// goList runs `go list -json args...` in the module and decodes its packages.
func goList(t *testing.T, args ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Name,Dir,GoFiles,Standard,Imports,Deps,Error"}, args...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func relative(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(importPath, module+"/")
	return rel, ok
}

// TestArrows checks every import between the module's packages against arrowError.
func TestArrows(t *testing.T) {
	pkgs := goList(t, "./...")
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		from, _ := relative(p.ImportPath)
		for _, imp := range p.Imports {
			to, ok := relative(imp)
			if !ok {
				continue
			}
			if why := arrowError(from, to); why != "" {
				t.Errorf("%s imports %s: %s (ARCHITECTURE.md)", from, to, why)
			}
		}
	}
}

// TestCoreImportsOnlyGoMLX checks that mhalib's packages import only the standard library,
// GoMLX, each other, and packages GoMLX itself imports (in the graph anyway, e.g. go-humanize) —
// never github.com/pkg/errors (archived; the standard library's errors replace it).
func TestCoreImportsOnlyGoMLX(t *testing.T) {
	closure := goList(t, "-deps", "./mhalib/...")
	byPath := map[string]pkg{}
	for _, p := range closure {
		byPath[p.ImportPath] = p
	}
	// What the GoMLX packages that mhalib imports pull in themselves.
	viaGoMLX := map[string]bool{}
	checked := 0
	for _, p := range closure {
		if rel, ok := relative(p.ImportPath); !ok || layerOf(rel) != core {
			continue
		}
		checked++
		for _, imp := range p.Imports {
			if imp == gomlx || strings.HasPrefix(imp, gomlx+"/") {
				for _, d := range byPath[imp].Deps {
					viaGoMLX[d] = true
				}
			}
		}
	}
	if checked < 2 {
		t.Fatalf("found %d mhalib packages", checked)
	}
	for _, p := range closure {
		rel, ok := relative(p.ImportPath)
		if !ok || layerOf(rel) != core {
			continue
		}
		for _, imp := range p.Imports {
			switch {
			case imp == "C":
				t.Errorf("%s uses cgo: mhalib is pure Go on GoMLX", rel)
			case byPath[imp].Standard, imp == gomlx || strings.HasPrefix(imp, gomlx+"/"):
			case imp == "github.com/pkg/errors":
				t.Errorf("%s imports github.com/pkg/errors (archived): use the standard library's errors and fmt", rel)
			case strings.HasPrefix(imp, module+"/"):
				// arrowError's business (TestArrows)
			case !viaGoMLX[imp]:
				t.Errorf("%s imports %s: mhalib imports only GoMLX, the standard library and what GoMLX itself imports (ARCHITECTURE.md)", rel, imp)
			}
		}
	}
}

// TestArrowRules checks the rules themselves on packages that do not exist yet (a bench
// package, models, a lessons runner), so that they are covered when they appear.
func TestArrowRules(t *testing.T) {
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"models/llama", "mhalib", true},
		{"models/llama", "torchio", true},
		{"models/llama", "models/modelfiles", true},
		{"models/llama", "cmd/mhalab", false},
		{"models/llama", "bench", false},
		{"models/llama", "parity", false},
		{"models/llama", "notebooks/nb", false},
		{"bench", "mhalib", true},
		{"bench", "xla", true},
		{"bench", "models/minilm", true},
		{"bench", "cmd/mhalab", false},
		{"bench", "lessons", false},
		{"cmd/mhalab", "bench", true},
		{"cmd/mhalab", "internal/lessonrun", true},
		{"internal/lessonrun", "lessons/solutions", true},
		{"internal/lessonrunner", "lessons", true},
		{"lessons/internal/grader", "torchio", true},
		{"notebooks/nb", "mhalib", true},
		{"parity", "notebooks/nb", false},
		{"mhalib", "torchio", false},
		{"mhalib", "xla", false},
		{"mhalib", "mhalib/mhatest", false},
		{"mhalib", "mhalib/decode", false},
		{"mhalib", "mhalib/dotgrad", false},
		{"mhalib", "fastgo", false},
		{"mhalib/decode", "mhalib", true},
		{"mhalib/train", "mhalib", true},
		{"mhalib/decode", "mhalib/train", false},
		{"mhalib/inspect", "mhalib/train", false},
		{"mhalib/train", "mhalib/dotgrad", false},
		{"mhalib/decode", "mhalib/decode/internal/x", true},
		{"mhalib/decode", "fastgo", false},
		{"mhalib/dotgrad", "xla", false},
		{"fastgo", "mhalib/dotgrad", true},
		{"cmd/mhalab", "mhalib/dotgrad", true},
		{"bench", "internal/plugincheck", false},
		{"internal/plugincheck", "xla", true},
		{"mhalib/mhatest", "internal/backendtest", false},
		{"torchio", "mhalib", true},
		{"torchio", "parity", false},
		{"xla", "cmd/mhalab", false},
		{"cmd/mhalab", "internal/commands/demo", true},
		{"internal/commands/demo", "internal/cli", true},
		{"internal/commands/demo", "bench", true},
		{"internal/commands/embed", "internal/commands/internal/minilmrun", true},
		{"internal/commands/chat", "internal/commands/generate", false},
		{"internal/commands/chat", "internal/commands/internal/smolrun", true},
		{"internal/commands/demo", "cmd/mhalab", false},
		{"bench", "internal/commands/bench", false},
		{"parity", "internal/commands/sdpa", false},
		{"models/smollm2", "internal/commands/generate", false},
		{"internal/cli", "internal/commands/demo", false},
	} {
		if why := arrowError(c.from, c.to); (why == "") != c.ok {
			t.Errorf("%s → %s: allowed %v, want %v (%s)", c.from, c.to, why == "", c.ok, why)
		}
	}
}
