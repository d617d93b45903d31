package docs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mhalab/mhalab/docs/internal/docgen"
)

// externalCommands are the programs a ```sh block may call besides make, mhalab, go and the
// repository's scripts; their use is not checked here.
var externalCommands = []string{"docker", "podman", "git", "cd", "helm", "kubectl", "python3", "cp", "ls", "export", "jupyter", "rsync", "python", "brew", "xcode-select", "apt-get", "sudo"}

var (
	targetRE  = regexp.MustCompile(`(?m)^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:([^=]|$)`)
	commentRE = regexp.MustCompile(`\s+#.*$`)
	envRE     = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=\S*$`)
)

// makeTargets returns the targets the Makefile defines.
func makeTargets() (map[string]bool, error) {
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil, err
	}
	targets := map[string]bool{}
	for _, m := range targetRE.FindAllStringSubmatch(string(data), -1) {
		for _, name := range strings.Fields(m[1]) {
			targets[name] = true
		}
	}
	return targets, nil
}

// helpCache holds the output of "mhalab help" (key "") and of "mhalab SUB -h".
var helpCache = map[string]string{}
var helpMu sync.Mutex

// helpOf returns the help text of mhalab (sub "") or of its command sub.
func helpOf(sub string) (string, error) {
	helpMu.Lock()
	defer helpMu.Unlock()
	if h, ok := helpCache[sub]; ok {
		return h, nil
	}
	dir, err := docgen.MhalabDir(root)
	if err != nil {
		return "", err
	}
	args := []string{"help"}
	if sub != "" {
		args = []string{sub, "-h"}
	}
	cmd := exec.Command(filepath.Join(dir, "mhalab"), args...)
	cmd.Dir = root
	out, _ := cmd.CombinedOutput() // -h exits 0 or 2 depending on the command
	helpCache[sub] = string(out)
	return string(out), nil
}

// checkShellLine checks one command line of a ```sh block: what it calls exists.
func checkShellLine(line string, targets map[string]bool) error {
	words := strings.Fields(line)
	for len(words) > 0 && envRE.MatchString(words[0]) { // VAR=value prefixes
		words = words[1:]
	}
	if len(words) == 0 {
		return nil
	}
	if words[0] == "bin/mhalab" { // what make build writes
		words[0] = "mhalab"
	}
	switch w := words[0]; {
	case w == "make":
		for _, a := range words[1:] {
			if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
				continue
			}
			if !targets[a] {
				return fmt.Errorf("make %s: no such target in the Makefile", a)
			}
		}
	case w == "mhalab":
		if len(words) < 2 {
			return nil
		}
		top, err := helpOf("")
		if err != nil {
			return err
		}
		sub := words[1]
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(sub) + `\s`).MatchString(top) {
			return fmt.Errorf("mhalab %s: no such command (mhalab help)", sub)
		}
		help, err := helpOf(sub)
		if err != nil {
			return err
		}
		for _, a := range words[2:] {
			name, ok := strings.CutPrefix(a, "--")
			if !ok || name == "" {
				continue
			}
			name, _, _ = strings.Cut(name, "=")
			if !strings.Contains(help, "-"+name) {
				return fmt.Errorf("mhalab %s: no flag --%s (mhalab %s -h)", sub, name, sub)
			}
		}
	case w == "go":
		for _, a := range words[2:] {
			if p, ok := strings.CutPrefix(a, "./"); ok {
				p = strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					return fmt.Errorf("go %s: %s does not exist", words[1], a)
				}
			}
		}
	case strings.Contains(w, "/"):
		if _, err := os.Stat(filepath.Join(root, w)); err != nil {
			return fmt.Errorf("%s does not exist", w)
		}
	case slices.Contains(externalCommands, w):
	default:
		return fmt.Errorf("%s: not a command these docs may use (add it to externalCommands in docs/sh_test.go if it is meant)", w)
	}
	return nil
}

// TestShellBlocks checks that what each ```sh block calls exists: make targets, mhalab
// commands and flags, package paths and scripts. (The commands themselves are make test's, the
// lab's and the images': CI runs them.)
func TestShellBlocks(t *testing.T) {
	targets, err := makeTargets()
	if err != nil {
		t.Fatal(err)
	}
	for _, blocks := range allBlocks(t) {
		for _, b := range blocks {
			if b.Lang != "sh" {
				continue
			}
			for _, line := range joinContinuations(b.Body) {
				line = strings.TrimSpace(commentRE.ReplaceAllString(line, ""))
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				for part := range strings.SplitSeq(line, "&&") {
					if err := checkShellLine(strings.TrimSpace(part), targets); err != nil {
						t.Errorf("%s: %v", b.Where(), err)
					}
				}
			}
		}
	}
}

// joinContinuations joins lines ending in a backslash.
func joinContinuations(body string) []string {
	var lines []string
	cur := ""
	for line := range strings.Lines(body) {
		line = strings.TrimRight(line, "\n")
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur += s + " "
			continue
		}
		lines = append(lines, cur+line)
		cur = ""
	}
	return lines
}

func TestShellLineCheckCatchesMistakes(t *testing.T) {
	targets := map[string]bool{"lab": true}
	for line, bad := range map[string]bool{
		"make lab":                   false,
		"make lab LAB_BACKEND=go":    false,
		"make labb":                  true,
		"GOMLX_BACKEND=go make lab":  false,
		"scripts/setup.sh --only go": false,
		"scripts/nope.sh":            true,
		"rm -rf /":                   true,
	} {
		if err := checkShellLine(line, targets); (err != nil) != bad {
			t.Errorf("checkShellLine(%q) = %v, want error: %v", line, err, bad)
		}
	}
}
