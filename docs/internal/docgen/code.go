package docgen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CodeFor returns the source a ```go block's marker "code: PATH [FUNC]" names, PATH relative to
// root: the whole file, or one function with its doc comment.
func CodeFor(root, marker string) (string, error) {
	spec, ok := strings.CutPrefix(marker, "code:")
	if !ok {
		return "", fmt.Errorf("no <!-- code: PATH [FUNC] --> line before it: every Go snippet must be a compiled file or Example")
	}
	fields := strings.Fields(spec)
	if len(fields) < 1 || len(fields) > 2 {
		return "", fmt.Errorf("marker %q: want code: PATH [FUNC]", marker)
	}
	src, err := os.ReadFile(filepath.Join(root, fields[0]))
	if err != nil {
		return "", err
	}
	if len(fields) == 1 {
		return string(src), nil
	}
	return FuncSource(fields[0], src, fields[1])
}

// FuncSource returns the declaration of the function name in a Go file, doc comment included,
// ending in a newline.
func FuncSource(path string, src []byte, name string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return "", err
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != name {
			continue
		}
		start := fd.Pos()
		if fd.Doc != nil {
			start = fd.Doc.Pos()
		}
		return string(src[fset.Position(start).Offset:fset.Position(fd.End()).Offset]) + "\n", nil
	}
	return "", fmt.Errorf("%s has no function %s", path, name)
}

// FirstDiff shows the first line where two texts differ.
func FirstDiff(doc, want string) string {
	d, w := strings.Split(doc, "\n"), strings.Split(want, "\n")
	for i := range max(len(d), len(w)) {
		var dl, wl string
		if i < len(d) {
			dl = d[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if dl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  doc:  " + dl + "\n  want: " + wl
		}
	}
	return "(trailing newline)"
}
