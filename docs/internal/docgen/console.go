package docgen

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// ConsoleOptions is what a ```console block's marker says.
type ConsoleOptions struct {
	Mode  string // "exact", "numbers vary" or "machine"
	Needs string // a model the commands need ("minilm", "smollm2") or ""
}

// ParseConsoleMarker reads "console[: numbers vary | machine][; needs MODEL]".
func ParseConsoleMarker(marker string) (ConsoleOptions, error) {
	o := ConsoleOptions{Mode: "exact"}
	rest, ok := strings.CutPrefix(marker, "console")
	if !ok {
		return o, fmt.Errorf("no <!-- console … --> line before it: say how stable its output is")
	}
	for part := range strings.SplitSeq(strings.TrimPrefix(rest, ":"), ";") {
		switch part = strings.TrimSpace(part); {
		case part == "":
		case part == "numbers vary" || part == "machine":
			o.Mode = part
		case strings.HasPrefix(part, "needs "):
			o.Needs = strings.TrimPrefix(part, "needs ")
			if _, ok := modelDirs[o.Needs]; !ok {
				return o, fmt.Errorf("marker %q: unknown model %q", marker, o.Needs)
			}
		default:
			return o, fmt.Errorf("marker %q: unknown option %q (numbers vary, machine, needs MODEL)", marker, part)
		}
	}
	return o, nil
}

// modelDirs are the folders scripts/setup.sh extracts each model into, under the models folder.
var modelDirs = map[string]string{"minilm": "all-minilm-l6-v2", "smollm2": "smollm2-135m-instruct"}

// ModelPresent reports whether scripts/setup.sh has set up the model (minilm, smollm2).
func ModelPresent(name string) bool {
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

// Commands returns the commands of a console block: its lines starting with "$ ".
func Commands(body string) []string {
	var cmds []string
	for line := range strings.Lines(body) {
		if c, ok := strings.CutPrefix(line, "$ "); ok {
			cmds = append(cmds, strings.TrimSpace(c))
		}
	}
	return cmds
}

var (
	binMu   sync.Mutex
	binDirs = map[string]string{}
)

// MhalabDir returns a folder holding mhalab freshly built from the repository at root (built
// once per process).
func MhalabDir(root string) (string, error) {
	binMu.Lock()
	defer binMu.Unlock()
	if dir, ok := binDirs[root]; ok {
		return dir, nil
	}
	dir, err := os.MkdirTemp("", "mhalab-docs-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "mhalab"), "./cmd/mhalab")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/mhalab: %v\n%s", err, out)
	}
	binDirs[root] = dir
	return dir, nil
}

// RunConsole runs a block's commands as a user would, from the repository's root with a fresh
// mhalab first on PATH, and returns the block's text: each "$ command" and its output.
func RunConsole(root string, cmds []string) (string, error) {
	dir, err := MhalabDir(root)
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
		b.WriteString(NormalizeOutput(string(out), abs))
		if err != nil {
			return b.String(), fmt.Errorf("$ %s: %v\n%s", c, err, out)
		}
	}
	return b.String(), nil
}

// NormalizeOutput writes the repository as . and the home folder as ~, drops trailing spaces and
// ends the output with a newline.
func NormalizeOutput(out, repo string) string {
	out = strings.ReplaceAll(out, repo, ".")
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
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

// MaskNumbers replaces durations and numbers, for output whose numbers are timings.
func MaskNumbers(s string) string {
	return numberRE.ReplaceAllString(durationRE.ReplaceAllString(s, "‹time›"), "‹n›")
}
