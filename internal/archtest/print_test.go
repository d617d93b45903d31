package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A library never prints: only a program (package main) writes to the process's standard
// streams, and a command (internal/commands/...) writes to the cli.IO it is given. So no package
// but main may name os.Stdout, os.Stderr or os.Stdin or call fmt.Print, fmt.Printf or
// fmt.Println — except the few below, each for its reason.

// mayPrint are the packages that may use the process's standard streams, and why.
var mayPrint = map[string]string{
	"notebooks/nb":            "its helpers print into the notebook cell (GoNB shows stdout): that is their output",
	"lessons/internal/grader": "it runs inside a student's test program and speaks to the judge over that process's stdout",
	"internal/sandbox":        "its trampoline (sandbox.Main, before exec) reports a broken policy on the child's stderr and exits",
	"internal/backendtest":    "its Main is a TestMain: it says on the test binary's stdout which backends the tests run on",
}

// streamUse is a use of a standard stream found in a file.
type streamUse struct {
	pos  token.Position
	what string // "os.Stdout", "fmt.Println", …
}

// standardStreams returns the uses of os.Stdout, os.Stderr, os.Stdin and fmt.Print* in the Go
// file path (through whatever names it imports os and fmt under).
func standardStreams(t *testing.T, fset *token.FileSet, path string) []streamUse {
	t.Helper()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // local name → "os" or "fmt"
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != "os" && p != "fmt" {
			continue
		}
		local := p
		if imp.Name != nil {
			local = imp.Name.Name
		}
		names[local] = p
	}
	forbidden := map[string]bool{"os.Stdout": true, "os.Stderr": true, "os.Stdin": true, "fmt.Print": true, "fmt.Printf": true, "fmt.Println": true}
	var uses []streamUse
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || names[x.Name] == "" {
			return true
		}
		if what := names[x.Name] + "." + sel.Sel.Name; forbidden[what] {
			uses = append(uses, streamUse{fset.Position(sel.Pos()), what})
		}
		return true
	})
	return uses
}

// TestLibrariesDoNotPrint checks every non-main package of the module (commands included: they
// write to their cli.IO) for the standard streams.
func TestLibrariesDoNotPrint(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	for _, p := range goList(t, "./...") {
		rel, ok := relative(p.ImportPath)
		if !ok || p.Name == "main" {
			continue
		}
		if _, ok := mayPrint[rel]; ok {
			continue
		}
		checked++
		for _, name := range p.GoFiles {
			for _, u := range standardStreams(t, fset, filepath.Join(p.Dir, name)) {
				t.Errorf("%s: %s uses %s: a library never prints — return the value, or take an io.Writer (a command: its cli.IO)", u.pos, rel, u.what)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d packages", checked)
	}
}

// TestStandardStreamsFound checks the finder itself on a file that prints in every way it
// looks for, through renamed imports too.
func TestStandardStreamsFound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.go")
	src := `package p

import (
	"fmt"
	goos "os"
)

func f() {
	fmt.Println("x")
	fmt.Fprintln(goos.Stderr, "y")
	_ = goos.Stdin
	fmt.Fprintf(nil, "fine: an io.Writer")
}
`
	if err := writeFile(path, src); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range standardStreams(t, token.NewFileSet(), path) {
		got = append(got, u.what)
	}
	want := []string{"fmt.Println", "os.Stderr", "os.Stdin"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("found %v, want %v", got, want)
	}
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }
