package docs

import (
	"strings"
	"testing"

	"github.com/mhalab/mhalab/docs/internal/docgen"
)

// TestGoBlocksAreCompiledCode checks that every ```go block of the docs equals the file or
// function its marker names: the code itself is compiled and tested where it lives.
func TestGoBlocksAreCompiledCode(t *testing.T) {
	n := 0
	for _, blocks := range allBlocks(t) {
		for _, b := range blocks {
			if b.Lang != "go" {
				continue
			}
			n++
			want, err := docgen.CodeFor(root, b.Marker)
			if err != nil {
				t.Errorf("%s: ```go block: %v", b.Where(), err)
				continue
			}
			if b.Body != want {
				t.Errorf("%s: the ```go block differs from %s (make docs copies it):\n%s", b.Where(),
					strings.TrimPrefix(b.Marker, "code: "), docgen.FirstDiff(b.Body, want))
			}
		}
	}
	t.Logf("%d ```go blocks checked", n)
}

func TestCodeMarkerCatchesDrift(t *testing.T) {
	src := []byte("package p\n\n// F does f.\nfunc F() int {\n\treturn 1\n}\n\nfunc G() {}\n")
	got, err := docgen.FuncSource("p.go", src, "F")
	if err != nil || got != "// F does f.\nfunc F() int {\n\treturn 1\n}\n" {
		t.Errorf("FuncSource(F) = %q, %v", got, err)
	}
	if _, err := docgen.FuncSource("p.go", src, "H"); err == nil {
		t.Error("FuncSource(H): no error")
	}
	if _, err := docgen.CodeFor(root, ""); err == nil {
		t.Error("a ```go block without a marker passes")
	}
}
