package docs

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mhalab/mhalab/bench"
)

// performanceReports renders every bench report in docs/bench/*.json, newest first (the file
// names start with the date), each as its run printed it — machine, date, load, command,
// tables — with headings one level down and the home folder written as ~.
func performanceReports() (string, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "bench", "*.json"))
	if err != nil {
		return "", err
	}
	slices.Reverse(files)
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
		for line := range strings.Lines(normalizeOutput(out.String(), abs)) {
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

func init() { generators["performance"] = performanceReports }
