package lessonrun

// Refusing graded files that use what the exercise asks the student to write: mhalib (the
// library the course builds, which has every answer), the graders' float64 reference, or a
// helper the exercise forbids (lessons.Exercise.Forbidden and Allowed).

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mhalab/mhalab/lessons"
)

// checkImports parses the graded files of e (name → content; names as shown to the student,
// e.g. "05_sdpa/sdpa.go") and returns one line per use the exercise refuses, "file:line: what:
// why". A file that does not parse is left to the compiler.
func checkImports(e lessons.Exercise, files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var problems []string
	fset := token.NewFileSet()
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, files[name], parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			continue
		}
		// A linkname reaches any function of the binary (mhalib's too, linked for the grader),
		// past the import rules.
		for _, group := range f.Comments {
			for _, c := range group.List {
				if strings.HasPrefix(c.Text, "//go:linkname") {
					problems = append(problems, fmt.Sprintf("%s:%d: //go:linkname: the graded files may not reach other packages' functions by their linker names.", name, fset.Position(c.Pos()).Line))
				}
			}
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				continue
			}
			at := fset.Position(spec.Pos())
			where := fmt.Sprintf("%s:%d", name, at.Line)
			if p == "C" {
				// cgo would compile the preamble with the grader's rights, outside the sandbox.
				problems = append(problems, fmt.Sprintf("%s: imports C: cgo is not allowed in the graded files (write the exercise in Go with GoMLX's graph operations).", where))
				continue
			}
			for _, r := range e.Forbidden() {
				if p == r.Import || strings.HasPrefix(p, r.Import+"/") {
					problems = append(problems, fmt.Sprintf("%s: imports %s: %s.", where, p, r.Why))
				}
			}
			if p != lessons.ModulePath && !strings.HasPrefix(p, lessons.ModulePath+"/") {
				continue
			}
			pkg := path.Base(p) // mhalab's packages are named after their folders
			local := pkg
			if spec.Name != nil {
				local = spec.Name.Name
			}
			may := e.AllowedIn(pkg)
			why := moduleWhy(e, pkg, may)
			if local == "." || local == "_" {
				problems = append(problems, fmt.Sprintf("%s: imports %s as %q: %s", where, p, local, why))
				continue
			}
			before := len(problems)
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == local && !slices.Contains(may, sel.Sel.Name) {
					at := fset.Position(sel.Pos())
					problems = append(problems, fmt.Sprintf("%s:%d: uses %s.%s: %s", name, at.Line, pkg, sel.Sel.Name, why))
				}
				return true
			})
			if len(may) == 0 && len(problems) == before {
				problems = append(problems, fmt.Sprintf("%s: imports %s: %s", where, p, why))
			}
		}
	}
	return problems
}

// moduleWhy says why a name of mhalab's package pkg is refused in exercise e, and what is allowed.
func moduleWhy(e lessons.Exercise, pkg string, may []string) string {
	why := fmt.Sprintf("exercise %d asks you to write it yourself, with GoMLX's graph operations, so the graded files may not use mhalab's own packages", e.Number)
	if pkg == "mhalib" {
		why = fmt.Sprintf("exercise %d asks you to write it yourself, with GoMLX's graph operations, so the graded files may not call mhalib (the library this course builds: it has every answer)", e.Number)
	}
	if len(may) > 0 {
		quoted := make([]string, len(may))
		for i, m := range may {
			quoted[i] = pkg + "." + m
		}
		why += fmt.Sprintf(" — except %s, which this exercise lets you use", strings.Join(quoted, ", "))
	}
	return why + "."
}
