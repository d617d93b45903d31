package docs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mhalab/mhalab/docs/internal/docgen"
)

// root is the repository's root, relative to this package.
const root = ".."

// docFiles are the Markdown files whose blocks are checked: README.md and docs/**/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := docgen.DocFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// allBlocks returns the blocks of every doc file, by file.
func allBlocks(t *testing.T) map[string][]docgen.Block {
	t.Helper()
	out := map[string][]docgen.Block{}
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = docgen.ParseBlocks(f, string(data))
	}
	return out
}

func TestParseBlocks(t *testing.T) {
	text := "# t\n\n<!-- code: a.go -->\n```go\npackage a\n```\n\ntext\n```sh\nmake lab\n```\n"
	got := docgen.ParseBlocks("x.md", text)
	if len(got) != 2 {
		t.Fatalf("%d blocks, want 2: %+v", len(got), got)
	}
	if got[0].Lang != "go" || got[0].Marker != "code: a.go" || got[0].Body != "package a\n" || got[0].Line != 4 {
		t.Errorf("block 0: %+v", got[0])
	}
	if got[1].Lang != "sh" || got[1].Marker != "" || got[1].Body != "make lab\n" {
		t.Errorf("block 1: %+v", got[1])
	}
	if text[got[0].Start:got[0].End] != got[0].Body {
		t.Errorf("offsets do not cut the body")
	}
	got[0].Body = "package b\n"
	if want := "# t\n\n<!-- code: a.go -->\n```go\npackage b\n```\n\ntext\n```sh\nmake lab\n```\n"; docgen.Replace(text, got[:1]) != want {
		t.Errorf("Replace = %q", docgen.Replace(text, got[:1]))
	}
}
