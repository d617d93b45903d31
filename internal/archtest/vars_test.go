package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoExportedMutableVars fails for an exported package-level var in a non-test .go file of
// the repository (generated files and the tools module included): another package could assign it or change its
// elements. Allowed: sentinel errors — a name starting with Err, or a value that is a call of
// errors.New or fmt.Errorf (nb.WriteMe). Expose a function returning a fresh copy, or a const.
func TestNoExportedMutableVars(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != "../.." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !name.IsExported() || strings.HasPrefix(name.Name, "Err") {
						continue
					}
					if i < len(vs.Values) && isErrorCall(vs.Values[i]) {
						continue
					}
					rel, _ := filepath.Rel("../..", p)
					t.Errorf("%s:%d: exported package variable %s is mutable by any importer: "+
						"make it a function returning a fresh copy, a const, or unexported",
						filepath.ToSlash(rel), fset.Position(name.Pos()).Line, name.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isErrorCall reports whether e is errors.New(…) or fmt.Errorf(…): a sentinel error.
func isErrorCall(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && (pkg.Name == "errors" && sel.Sel.Name == "New" || pkg.Name == "fmt" && sel.Sel.Name == "Errorf")
}
