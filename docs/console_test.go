package docs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mhalab/mhalab/internal/testenv"
)

// mhalabDir returns a folder holding a freshly built mhalab, built once per test binary.
var mhalabDir = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mhalab-docs-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "mhalab"), "./cmd/mhalab")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/mhalab: %v\n%s", err, out)
	}
	return dir, nil
})

// consoleOptions is what a console block's marker says.
type consoleOptions struct {
	mode  string // "exact", "numbers vary" or "machine"
	needs string // a model the commands need ("minilm", "smollm2") or ""
}

func parseConsoleMarker(marker string) (consoleOptions, error) {
	o := consoleOptions{mode: "exact"}
	rest, ok := strings.CutPrefix(marker, "console")
	if !ok {
		return o, fmt.Errorf("no <!-- console … --> line before it: say how stable its output is")
	}
	for part := range strings.SplitSeq(strings.TrimPrefix(rest, ":"), ";") {
		switch part = strings.TrimSpace(part); {
		case part == "":
		case part == "numbers vary" || part == "machine":
			o.mode = part
		case strings.HasPrefix(part, "needs "):
			o.needs = strings.TrimPrefix(part, "needs ")
			if _, ok := modelDirs[o.needs]; !ok {
				return o, fmt.Errorf("marker %q: unknown model %q", marker, o.needs)
			}
		default:
			return o, fmt.Errorf("marker %q: unknown option %q (numbers vary, machine, needs MODEL)", marker, part)
		}
	}
	return o, nil
}

// modelDirs are the folders scripts/setup.sh extracts each model into, under the models folder.
var modelDirs = map[string]string{"minilm": "all-minilm-l6-v2", "smollm2": "smollm2-135m-instruct"}

func modelPresent(name string) bool {
	dir := os.Getenv("MHALAB_MODELS")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return false
		}
		dir = filepath.Join(cache, "mhalab", "models")
	}
	_, err := os.Stat(filepath.Join(dir, modelDirs[name]))
	return err == nil
}

// commands returns the commands of a console block: its lines starting with "$ ".
func commands(body string) []string {
	var cmds []string
	for line := range strings.Lines(body) {
		if c, ok := strings.CutPrefix(line, "$ "); ok {
			cmds = append(cmds, strings.TrimSpace(c))
		}
	}
	return cmds
}

// runConsole runs a block's commands as a user would, from the repository's root with the
// freshly built mhalab first on PATH, and returns the block's new text.
func runConsole(cmds []string) (string, error) {
	dir, err := mhalabDir()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range cmds {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", c)
		cmd.Dir = abs
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "GOMLX_NO_AUTO_INSTALL=1")
		out, err := cmd.CombinedOutput()
		cancel()
		b.WriteString("$ " + c + "\n")
		b.WriteString(normalizeOutput(string(out), abs))
		if err != nil {
			return b.String(), fmt.Errorf("$ %s: %v\n%s", c, err, out)
		}
	}
	return b.String(), nil
}

// normalizeOutput writes the home folder as ~ and the repository as ., drops trailing spaces
// and ends the output with a newline.
func normalizeOutput(out, repo string) string {
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		out = strings.ReplaceAll(out, repo, ".")
		out = strings.ReplaceAll(out, home, "~")
	}
	var b strings.Builder
	for line := range strings.Lines(out) {
		b.WriteString(strings.TrimRight(line, " \t\n") + "\n")
	}
	return b.String()
}

var (
	durationRE = regexp.MustCompile(`\d+(\.\d+)?\s?(ns|µs|us|ms|s|min)\b`)
	numberRE   = regexp.MustCompile(`\d+(\.\d+)?([eE][-+]?\d+)?`)
)

// maskNumbers replaces durations and numbers, for output whose numbers are timings.
func maskNumbers(s string) string {
	return numberRE.ReplaceAllString(durationRE.ReplaceAllString(s, "‹time›"), "‹n›")
}

// TestConsoleBlocks runs the commands of every ```console block and compares their output with
// the block (`make docs` rewrites the blocks: go test ./docs -run TestConsoleBlocks -update).
func TestConsoleBlocks(t *testing.T) {
	for file, blocks := range allBlocks(t) {
		var edits []block
		for _, b := range blocks {
			if b.lang != "console" {
				continue
			}
			opts, err := parseConsoleMarker(b.marker)
			if err != nil {
				t.Errorf("%s: ```console block: %v", b.where(), err)
				continue
			}
			cmds := commands(b.body)
			if len(cmds) == 0 {
				t.Errorf("%s: ```console block without a \"$ \" command", b.where())
				continue
			}
			if opts.needs != "" && !modelPresent(opts.needs) {
				if testenv.InCI() {
					t.Errorf("%s: model %s is not set up (scripts/setup.sh --only %s)", b.where(), opts.needs, opts.needs)
				} else {
					t.Logf("%s: not run: model %s is not set up (scripts/setup.sh --only %s)", b.where(), opts.needs, opts.needs)
				}
				continue
			}
			got, err := runConsole(cmds)
			if err != nil {
				t.Errorf("%s: %v", b.where(), err)
				continue
			}
			if *update {
				b.body = got
				edits = append(edits, b)
				continue
			}
			switch opts.mode {
			case "exact":
				if got != b.body {
					t.Errorf("%s: the output changed (make docs rewrites it):\n%s", b.where(), firstDiff(b.body, got))
				}
			case "numbers vary":
				if maskNumbers(got) != maskNumbers(b.body) {
					t.Errorf("%s: the output changed beyond its numbers (make docs rewrites it):\n%s", b.where(), firstDiff(maskNumbers(b.body), maskNumbers(got)))
				}
			}
		}
		if len(edits) > 0 {
			rewrite(t, file, edits)
		}
	}
}

// rewrite replaces the bodies of the edited blocks in file (go and console blocks).
func rewrite(t *testing.T, file string, edits []block) {
	path := filepath.Join(root, file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	slices.SortFunc(edits, func(a, b block) int { return b.start - a.start }) // from the end
	for _, e := range edits {
		text = text[:e.start] + e.body + text[e.end:]
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote %d blocks of %s", len(edits), file)
}

func TestMaskNumbers(t *testing.T) {
	a := "compile:  0.30 ms (first run: 0.29 ms)\nrun: median 12 µs over 5 runs"
	b := "compile:  1.2 s (first run: 980 ms)\nrun: median 3.4 ms over 17 runs"
	if maskNumbers(a) != maskNumbers(b) {
		t.Errorf("%q != %q", maskNumbers(a), maskNumbers(b))
	}
	if maskNumbers("rows sum to 1: true") == maskNumbers("rows sum to 1: false") {
		t.Error("masking hides a changed word")
	}
}
