// Package notebooks_test checks the notebooks as committed: no outputs, the GoNB kernel, the
// setup cell that makes them use this repository's mhalib, and real checks in each.
// Running them is scripts/notebooks.py's job (make notebooks).
package notebooks_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type cell struct {
	CellType string `json:"cell_type"`
	Metadata struct {
		Jupyter struct {
			SourceHidden bool `json:"source_hidden"`
		} `json:"jupyter"`
	} `json:"metadata"`
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
	"10_modern_attention.ipynb",
	"11_heads_learn.ipynb",
	"12_real_llm.ipynb",
}

// course are the notebooks held to the teaching rules of issue 16 (short, narrow cells, a quiet
// setup cell, an exercise with a folded solution): all twelve.
var course = []string{
	"01_qkv_projection.ipynb", "02_heads.ipynb", "03_sdpa_masks.ipynb", "04_mha.ipynb",
	"05_flash.ipynb", "06_parity.ipynb", "07_kvcache.ipynb", "08_xla.ipynb",
	"09_real_sentences.ipynb", "10_modern_attention.ipynb", "11_heads_learn.ipynb",
	"12_real_llm.ipynb",
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

// The setup cell points the module at this repository and pins GoNB, quietly: go get's
// "go: added …" lines are shown only when it fails (it then runs again, with its messages).
// setupLineLoud is the one-line form (go get prints its "go: added …" lines).
var setupLineLoud = regexp.MustCompile(`(?m)^!\*go mod edit -replace github\.com/mhalab/mhalab=\$\{GONB_DIR\}/\.\. -require github\.com/mhalab/mhalab@v0\.0\.0 && go get github\.com/janpfeifer/gonb@v0\.11\.3$`)

var setupLine = regexp.MustCompile(`(?m)^!\*go mod edit -replace github\.com/mhalab/mhalab=\$\{GONB_DIR\}/\.\. \\
\t-require github\.com/mhalab/mhalab@v0\.0\.0 && \\
\t\{ go get github\.com/janpfeifer/gonb@v0\.11\.3 2>/dev/null \|\| \\
\tgo get github\.com/janpfeifer/gonb@v0\.11\.3; \}$`)

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
		quiet := setupLine.MatchString(firstCode)
		switch {
		case slices.Contains(course, name) && !quiet:
			t.Errorf("%s: the first code cell is not the quiet setup cell (want %q), got:\n%s", name, setupLine, firstCode)
		case !quiet && !setupLineLoud.MatchString(firstCode):
			t.Errorf("%s: the first code cell does not point the notebook at this repository (want %q), got:\n%s", name, setupLine, firstCode)
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

// Cells show one idea in a screenful, and no line is cut off in the exported HTML: code cells
// have at most maxCellLines lines (an import block included) of at most maxLineWidth
// characters (a tab counts 4).
const maxCellLines, maxLineWidth = 32, 100

func TestCodeCellsAreShortAndNarrow(t *testing.T) {
	for name, nb := range notebooks(t) {
		if !slices.Contains(course, name) {
			continue
		}
		for i, c := range nb.Cells {
			if c.CellType != "code" {
				continue
			}
			lines := strings.Split(c.source(t), "\n")
			if len(lines) > maxCellLines {
				t.Errorf("%s: cell %d has %d lines, want ≤ %d (move helpers to notebooks/nb or a cell of their own)",
					name, i+1, len(lines), maxCellLines)
			}
			for _, l := range lines {
				if w := len([]rune(strings.ReplaceAll(l, "\t", "    "))); w > maxLineWidth {
					t.Errorf("%s: cell %d has a line of %d characters (> %d): %.60s…", name, i+1, w, maxLineWidth, l)
				}
			}
		}
	}
}

// Every notebook has an exercise: a cell that reports the reader's answer with nb.Exercise
// (which never stops the notebook), followed by its solution, folded (source hidden), which
// checks the answer with nb.Check or nb.CheckClose — so CI proves every solution right.
func TestNotebooksHaveExercisesWithFoldedSolutions(t *testing.T) {
	for name, nb := range notebooks(t) {
		if !slices.Contains(course, name) {
			continue
		}
		exercises := 0
		for i, c := range nb.Cells {
			if c.CellType != "code" || !strings.Contains(c.source(t), "nb.Exercise(") {
				continue
			}
			exercises++
			if i+1 >= len(nb.Cells) {
				t.Errorf("%s: the exercise in cell %d has no solution cell after it", name, i+1)
				continue
			}
			sol := nb.Cells[i+1]
			src := sol.source(t)
			if sol.CellType != "code" || !sol.Metadata.Jupyter.SourceHidden ||
				!(strings.Contains(src, "nb.Check(") || strings.Contains(src, "nb.CheckClose(")) {
				t.Errorf("%s: cell %d after the exercise in cell %d is not a folded solution that checks its answer",
					name, i+2, i+1)
			}
		}
		if exercises == 0 {
			t.Errorf("%s: no exercise (a cell calling nb.Exercise)", name)
		}
	}
}

// Students share lab machines: a file a notebook writes under the shared temporary folder with
// a fixed name belongs to whoever ran it first, and the next user's run fails on it ("permission
// denied"). Notebooks write to the user's own folders (os.UserCacheDir, the repository's build/).
func TestNotebooksDoNotWriteFixedNamesInSharedTmp(t *testing.T) {
	for name, nb := range notebooks(t) {
		for i, c := range nb.Cells {
			if c.CellType != "code" {
				continue
			}
			src := c.source(t)
			if strings.Contains(src, "os.TempDir()") || strings.Contains(src, "\"/tmp/") {
				t.Errorf("%s: cell %d writes under the shared temporary folder; use os.UserCacheDir() or build/", name, i+1)
			}
		}
	}
}
