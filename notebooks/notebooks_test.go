// Package notebooks_test checks the notebooks as committed: no outputs, the GoNB kernel, the
// setup cell that makes them use this repository's mhalib, and real checks in each.
// Running them is scripts/notebooks.py's job (make notebooks).
package notebooks_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

type cell struct {
	CellType       string          `json:"cell_type"`
	Source         json.RawMessage `json:"source"` // a string or a list of strings
	Outputs        []any           `json:"outputs"`
	ExecutionCount *int            `json:"execution_count"`
}

type notebook struct {
	Cells    []cell `json:"cells"`
	Metadata struct {
		Kernelspec struct {
			Name string `json:"name"`
		} `json:"kernelspec"`
	} `json:"metadata"`
}

func (c cell) source(t *testing.T) string {
	var s string
	if json.Unmarshal(c.Source, &s) == nil {
		return s
	}
	var lines []string
	if err := json.Unmarshal(c.Source, &lines); err != nil {
		t.Fatalf("cell source is neither a string nor a list of strings: %s", c.Source)
	}
	return strings.Join(lines, "")
}

func notebooks(t *testing.T) map[string]notebook {
	t.Helper()
	paths, err := filepath.Glob("*.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]notebook{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var nb notebook
		if err := json.Unmarshal(data, &nb); err != nil {
			t.Fatalf("%s: not a notebook: %v", p, err)
		}
		out[p] = nb
	}
	return out
}

// The notebooks of the course, in order.
var want = []string{
	"01_qkv_projection.ipynb",
	"02_heads.ipynb",
	"03_sdpa_masks.ipynb",
	"04_mha.ipynb",
	"05_flash.ipynb",
	"06_parity.ipynb",
	"07_kvcache.ipynb",
	"08_xla.ipynb",
	"09_real_sentences.ipynb",
}

func TestAllNotebooksArePresent(t *testing.T) {
	nbs := notebooks(t)
	for _, name := range want {
		if _, ok := nbs[name]; !ok {
			t.Errorf("notebook %s is missing", name)
		}
	}
}

// Notebooks are committed without outputs: outputs depend on the machine and the backend,
// make diffs unreadable, and would hide whether a notebook still runs.
func TestNotebooksHaveNoOutputs(t *testing.T) {
	for name, nb := range notebooks(t) {
		for i, c := range nb.Cells {
			if c.CellType != "code" {
				continue
			}
			if len(c.Outputs) > 0 || c.ExecutionCount != nil {
				t.Errorf("%s: cell %d has outputs or an execution count: clear them before committing (Jupyter: Edit → Clear All Outputs; or jupyter nbconvert --clear-output --inplace %s)", name, i+1, name)
			}
		}
	}
}

var setupLine = regexp.MustCompile(`(?m)^!\*go mod edit -replace github\.com/mhalab/mhalab=\$\{GONB_DIR\}/\.\. -require github\.com/mhalab/mhalab@v0\.0\.0 && go get github\.com/janpfeifer/gonb@v0\.11\.3$`)

func TestNotebooksUseTheRepositoryAndGoNB(t *testing.T) {
	for name, nb := range notebooks(t) {
		if nb.Metadata.Kernelspec.Name != "gonb" {
			t.Errorf("%s: kernel %q, want gonb", name, nb.Metadata.Kernelspec.Name)
		}
		var firstCode string
		for _, c := range nb.Cells {
			if c.CellType == "code" {
				firstCode = c.source(t)
				break
			}
		}
		if !setupLine.MatchString(firstCode) {
			t.Errorf("%s: the first code cell does not point the notebook at this repository (want the line %q), got:\n%s", name, setupLine, firstCode)
		}
		if strings.Contains(firstCode, "${HOME}") || strings.Contains(firstCode, "/root/") {
			t.Errorf("%s: the setup cell uses a home-specific path", name)
		}
	}
}

// Every notebook checks what it shows: at least one nb.Check / nb.CheckClose, so a wrong
// mhalib makes it fail (scripts/notebooks_selftest.sh proves it for one).
func TestNotebooksCheckTheirNumbers(t *testing.T) {
	for name, nb := range notebooks(t) {
		checks := 0
		for _, c := range nb.Cells {
			if c.CellType == "code" {
				src := c.source(t)
				checks += strings.Count(src, "nb.Check(") + strings.Count(src, "nb.CheckClose(")
			}
		}
		if checks < 3 {
			t.Errorf("%s: %d checks (nb.Check/nb.CheckClose), want at least 3", name, checks)
		}
	}
}
