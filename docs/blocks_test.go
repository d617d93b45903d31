package docs

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite generated parts of the docs (console output, performance.md)")

// root is the repository's root, relative to this package.
const root = ".."

// block is one fenced code block of a Markdown file.
type block struct {
	file   string // path relative to the repository's root
	line   int    // 1-based line of the opening fence
	lang   string // the fence's info string: go, console, sh, …
	marker string // the <!-- … --> comment on the line before the fence ("" if none)
	body   string // the lines between the fences, each ending in "\n"
	// start and end are the byte offsets of body in the file.
	start, end int
}

func (b block) where() string { return b.file + ":" + strconv.Itoa(b.line) }

var markerRE = regexp.MustCompile(`^<!--\s*(.*?)\s*-->$`)

// parseBlocks returns the fenced blocks of a Markdown text (fences at the start of a line).
func parseBlocks(file, text string) []block {
	var blocks []block
	lines := strings.SplitAfter(text, "\n")
	offset := 0
	var cur *block
	prev := ""
	for i, line := range lines {
		trimmed := strings.TrimRight(line, "\n")
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &block{file: file, line: i + 1, lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), start: offset + len(line)}
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.marker = m[1]
			}
		case cur != nil && trimmed == "```":
			cur.end = offset
			cur.body = text[cur.start:cur.end]
			blocks = append(blocks, *cur)
			cur = nil
		}
		if strings.TrimSpace(trimmed) != "" {
			prev = trimmed
		}
		offset += len(line)
	}
	return blocks
}

// docFiles are the Markdown files whose blocks are checked: README.md and docs/**/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(root+"/docs", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "_build" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files[1:])
	return files
}

// allBlocks returns the blocks of every doc file, by file.
func allBlocks(t *testing.T) map[string][]block {
	t.Helper()
	out := map[string][]block{}
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = parseBlocks(f, string(data))
	}
	return out
}

func TestParseBlocks(t *testing.T) {
	text := "# t\n\n<!-- code: a.go -->\n```go\npackage a\n```\n\ntext\n```sh\nmake lab\n```\n"
	got := parseBlocks("x.md", text)
	if len(got) != 2 {
		t.Fatalf("%d blocks, want 2: %+v", len(got), got)
	}
	if got[0].lang != "go" || got[0].marker != "code: a.go" || got[0].body != "package a\n" || got[0].line != 4 {
		t.Errorf("block 0: %+v", got[0])
	}
	if got[1].lang != "sh" || got[1].marker != "" || got[1].body != "make lab\n" {
		t.Errorf("block 1: %+v", got[1])
	}
	if text[got[0].start:got[0].end] != got[0].body {
		t.Errorf("offsets do not cut the body")
	}
}
