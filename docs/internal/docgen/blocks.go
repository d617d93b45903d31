// Package docgen reads the documentation's code blocks and generated regions and produces what
// they must hold: the docs' tests (package docs) compare, `go generate ./docs` rewrites
// (docs/internal/gen). docs/docs.md says what each marker means.
package docgen

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Block is one fenced code block of a Markdown file.
type Block struct {
	File   string // path relative to the repository's root
	Line   int    // 1-based line of the opening fence
	Lang   string // the fence's info string: go, console, sh, …
	Marker string // the <!-- … --> comment on the line before the fence ("" if none)
	Body   string // the lines between the fences, each ending in "\n"
	// Start and End are the byte offsets of Body in the file.
	Start, End int
}

// Where is FILE:LINE of the block's opening fence.
func (b Block) Where() string { return b.File + ":" + strconv.Itoa(b.Line) }

var markerRE = regexp.MustCompile(`^<!--\s*(.*?)\s*-->$`)

// ParseBlocks returns the fenced blocks of a Markdown text (fences at the start of a line).
func ParseBlocks(file, text string) []Block {
	var blocks []Block
	offset := 0
	var cur *Block
	prev := ""
	for i, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &Block{File: file, Line: i + 1, Lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), Start: offset + len(line)}
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.Marker = m[1]
			}
		case cur != nil && trimmed == "```":
			cur.End = offset
			cur.Body = text[cur.Start:cur.End]
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

// DocFiles are the Markdown files whose blocks are checked: README.md and docs/**/*.md, relative
// to root.
func DocFiles(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(files[1:])
	return files, err
}

// Replace returns text with the bodies of the given blocks (of that text) replaced.
func Replace(text string, blocks []Block) string {
	blocks = slices.Clone(blocks)
	slices.SortFunc(blocks, func(a, b Block) int { return b.Start - a.Start }) // from the end
	for _, b := range blocks {
		text = text[:b.Start] + b.Body + text[b.End:]
	}
	return text
}
