package docs

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGoBlocksAreCompiledCode checks that every ```go block of the docs equals the file or
// function its marker names: the code itself is compiled and tested where it lives.
func TestGoBlocksAreCompiledCode(t *testing.T) {
	n := 0
	for file, blocks := range allBlocks(t) {
		var edits []block
		for _, b := range blocks {
			if b.lang != "go" {
				continue
			}
			n++
			want, err := codeFor(b.marker)
			if err != nil {
				t.Errorf("%s: ```go block: %v", b.where(), err)
				continue
			}
			if b.body != want && *update {
				b.body = want
				edits = append(edits, b)
			} else if b.body != want {
				t.Errorf("%s: the ```go block differs from %s: copy it again\n%s", b.where(),
					strings.TrimPrefix(b.marker, "code: "), firstDiff(b.body, want))
			}
		}
		if len(edits) > 0 {
			rewrite(t, file, edits)
		}
	}
	t.Logf("%d ```go blocks checked", n)
}

// codeFor returns the source a marker "code: PATH [FUNC]" names.
func codeFor(marker string) (string, error) {
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
	return funcSource(fields[0], src, fields[1])
}

// funcSource returns the declaration of the function name in a Go file, doc comment included,
// ending in a newline.
func funcSource(path string, src []byte, name string) (string, error) {
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

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			var b bytes.Buffer
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  doc:  " + gl + "\n  code: " + wl)
			return b.String()
		}
	}
	return "(trailing newline)"
}

func TestCodeMarkerCatchesDrift(t *testing.T) {
	src := []byte("package p\n\n// F does f.\nfunc F() int {\n\treturn 1\n}\n\nfunc G() {}\n")
	got, err := funcSource("p.go", src, "F")
	if err != nil || got != "// F does f.\nfunc F() int {\n\treturn 1\n}\n" {
		t.Errorf("funcSource(F) = %q, %v", got, err)
	}
	if _, err := funcSource("p.go", src, "H"); err == nil {
		t.Error("funcSource(H): no error")
	}
	if _, err := codeFor(""); err == nil {
		t.Error("a ```go block without a marker passes")
	}
}
