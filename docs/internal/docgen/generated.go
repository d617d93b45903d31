package docgen

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mhalab/mhalab/bench"
)

// A generated region of a doc lies between <!-- begin generated: NAME --> and
// <!-- end generated: NAME -->; generators[NAME] writes it from the repository's files.
var generators = map[string]func(root string) (string, error){
	"notebooks":   notebookTable,
	"lessons":     lessonTable,
	"performance": performanceReports,
}

// regionRE matches one generated region: its begin line, its text and its end line.
var regionRE = regexp.MustCompile(`(?s)(<!-- begin generated: ([a-z-]+) -->\n)(.*?)(<!-- end generated: ([a-z-]+) -->)`)

// notebookTable lists notebooks/*.ipynb with the title of each (its first Markdown heading).
func notebookTable(root string) (string, error) {
	files, err := filepath.Glob(filepath.Join(root, "notebooks", "*.ipynb"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| | notebook |\n|---:|---|\n")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var nb struct {
			Cells []struct {
				CellType string          `json:"cell_type"`
				Source   json.RawMessage `json:"source"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(data, &nb); err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		title := ""
		for _, c := range nb.Cells {
			if c.CellType != "markdown" {
				continue
			}
			title, _ = headingAndSentence(cellSource(c.Source))
			break
		}
		if title == "" {
			return "", fmt.Errorf("%s: no Markdown heading in its first Markdown cell", f)
		}
		name := filepath.Base(f)
		num, rest, ok := strings.Cut(title, " · ") // "3 · Scaled dot-product attention and masks"
		if !ok {
			num, rest = strings.TrimLeft(name[:2], "0"), title
		}
		fmt.Fprintf(&b, "| %s | [%s](notebooks/%s) |\n", num, rest, name)
	}
	return b.String(), nil
}

// cellSource joins a notebook cell's source (a string or a list of strings).
func cellSource(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []string
	_ = json.Unmarshal(raw, &parts)
	return strings.Join(parts, "")
}

var sentenceEndRE = regexp.MustCompile(`[.!?](\s|$)`)

// headingAndSentence returns a Markdown text's first heading (without #) and its first
// sentence after the heading, on one line, with table pipes escaped.
func headingAndSentence(md string) (heading, sentence string) {
	var rest []string
	for line := range strings.Lines(md) {
		line = strings.TrimSpace(line)
		if heading == "" {
			if h, ok := strings.CutPrefix(line, "# "); ok {
				heading = strings.TrimSpace(h)
			}
			continue
		}
		if line == "" && len(rest) > 0 {
			break
		}
		if line != "" {
			rest = append(rest, line)
		}
	}
	para := strings.Join(rest, " ")
	if loc := sentenceEndRE.FindStringIndex(para); loc != nil {
		para = para[:loc[0]+1]
	}
	return strings.ReplaceAll(heading, "|", `\|`), strings.ReplaceAll(para, "|", `\|`)
}

// lessonTable lists lessons/NN_*/ with the title of each README, as one wrapped paragraph.
func lessonTable(root string) (string, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "lessons", "[0-9][0-9]_*"))
	if err != nil {
		return "", err
	}
	var items []string
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "README.md"))
		if err != nil {
			return "", err
		}
		title, _ := headingAndSentence(string(data))
		_, title, _ = strings.Cut(title, "— ") // "Lesson 5 — Scaled dot-product…"
		name := filepath.Base(d)
		items = append(items, fmt.Sprintf("[%s %s](lessons/%s/README.md)", strings.TrimLeft(name[:2], "0"), title, name))
	}
	return wrap(items, " · ", 160), nil
}

// wrap joins items with sep into lines of at most width bytes where it can, breaking only
// between items (a link is never cut in two).
func wrap(items []string, sep string, width int) string {
	var b strings.Builder
	n := 0
	for i, item := range items {
		if i > 0 {
			if n+len(sep)+len(item) > width {
				b.WriteString(strings.TrimRight(sep, " ") + "\n")
				n = 0
			} else {
				b.WriteString(sep)
				n += len(sep)
			}
		}
		b.WriteString(item)
		n += len(item)
	}
	return b.String() + "\n"
}

// performanceReports renders every bench report in docs/bench/*.json, newest first (by the
// report's "started" time: several runs of one day share the date in their file names), each as its run printed it — machine, date, load, command,
// tables — with headings one level down and the home folder written as ~.
func performanceReports(root string) (string, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "bench", "*.json"))
	if err != nil {
		return "", err
	}
	started := make(map[string]string, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var head struct {
			Started string `json:"started"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		started[f] = head.Started
	}
	slices.SortStableFunc(files, func(a, b string) int { // newest first; RFC 3339 UTC sorts as text
		return cmp.Or(strings.Compare(started[b], started[a]), strings.Compare(b, a))
	})
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, f := range files {
		var out bytes.Buffer
		if err := bench.RenderReport(&out, f); err != nil {
			return "", err
		}
		b.WriteString("\n")
		header := true // the lines before the first table heading: one fact each, as a list
		for line := range strings.Lines(NormalizeOutput(out.String(), abs)) {
			if strings.HasPrefix(line, "## ") {
				header = false
			}
			if strings.HasPrefix(line, "#") {
				line = "#" + line
			} else if header && strings.TrimSpace(line) != "" {
				line = "- " + line
			}
			if strings.HasPrefix(line, "JSON: ") {
				continue // the path the run wrote; the file is linked below instead
			}
			b.WriteString(line)
		}
		b.WriteString("\nData: [" + filepath.Base(f) + "](bench/" + filepath.Base(f) + ")\n\n")
	}
	return b.String(), nil
}

// Regenerate returns text (the content of file, relative to root) with every generated region
// rewritten by its generator. Links in a region are relative to the repository's root: a doc
// under docs/ gets ../.
func Regenerate(root, file, text string) (string, error) {
	prefix := strings.Repeat("../", strings.Count(file, "/"))
	var genErr error
	out := regionRE.ReplaceAllStringFunc(text, func(region string) string {
		m := regionRE.FindStringSubmatch(region)
		name := m[2]
		if m[5] != name {
			genErr = fmt.Errorf("%s: region %s ends with %s", file, name, m[5])
			return region
		}
		gen, ok := generators[name]
		if !ok {
			genErr = fmt.Errorf("%s: no generator %q", file, name)
			return region
		}
		body, err := gen(root)
		if err != nil {
			genErr = err
			return region
		}
		body = strings.ReplaceAll(body, "](notebooks/", "]("+prefix+"notebooks/")
		body = strings.ReplaceAll(body, "](lessons/", "]("+prefix+"lessons/")
		return m[1] + body + m[4]
	})
	return out, genErr
}

// StripRegions returns text without its generated regions (begin line, text and end line).
func StripRegions(text string) string { return regionRE.ReplaceAllString(text, "") }
