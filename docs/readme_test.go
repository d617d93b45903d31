package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/docs/internal/docgen"
)

// maxReadmeLines keeps the README one screen per question: what, how to start, show me.
const maxReadmeLines = 200

// measuredRE finds a measured comparison typed by hand: a number followed by × or ms.
var measuredRE = regexp.MustCompile(`\d(\.\d+)?\s?(×([^0-9]|$)|x\b|ms\b)`)

// handTyped returns the lines of a Markdown text outside console blocks and generated regions
// that state a number followed by × or ms.
func handTyped(text string) []string {
	text = docgen.StripRegions(text)
	var bad []string
	inConsole, inFence := false, false
	for line := range strings.Lines(text) {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inFence = !inFence
			inConsole = inFence && trimmed == "```console"
			continue
		}
		if inConsole {
			continue
		}
		if measuredRE.MatchString(line) {
			bad = append(bad, strings.TrimSpace(line))
		}
	}
	return bad
}

func TestReadmeIsShortAndTypesNoMeasurements(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move details into docs/", n, maxReadmeLines)
	}
	for _, line := range handTyped(string(data)) {
		t.Errorf("README.md states a measurement by hand (generate it in a console block or docs/performance.md): %s", line)
	}
}

func TestHandTypedCatchesNumbers(t *testing.T) {
	text := "fast: 11–19× slower\n```console\n$ mhalab demo\nrun: 3 ms\n```\nok 4 heads\n"
	bad := handTyped(text)
	if len(bad) != 1 || !strings.Contains(bad[0], "19×") {
		t.Errorf("handTyped = %q", bad)
	}
}

var (
	linkRE  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fenceRE = regexp.MustCompile("(?ms)^```.*?^```$") // code blocks: no links there
)

// TestRelativeLinksResolve checks every relative link of the docs points at a file or folder
// of the repository (anchors are not checked here; the book's browser check follows them).
func TestRelativeLinksResolve(t *testing.T) {
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(string(data), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p := filepath.Join(root, filepath.Dir(file), target)
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: link %s: %v", file, m[1], err)
			}
		}
	}
}
