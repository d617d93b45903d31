// Package notebooks_test checks the notebooks as committed: no outputs, the GoNB kernel, the
// setup cell that makes them use this repository's mhalib, and real checks in each.
// Running them is scripts/notebooks.py's job (make notebooks).
package notebooks_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
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
	"00_attention_by_hand.ipynb",
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
	"13_devices.ipynb",
}

// course are the notebooks held to the teaching rules of issue 16 (short, narrow cells, a quiet
// setup cell, an exercise with a folded solution): all of them, 00–13.
var course = []string{
	"00_attention_by_hand.ipynb", "01_qkv_projection.ipynb", "02_heads.ipynb", "03_sdpa_masks.ipynb",
	"04_mha.ipynb", "05_flash.ipynb", "06_parity.ipynb", "07_kvcache.ipynb", "08_xla.ipynb",
	"09_real_sentences.ipynb", "10_modern_attention.ipynb", "11_heads_learn.ipynb",
	"12_real_llm.ipynb", "13_devices.ipynb",
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
			if src := c.source(t); c.CellType != "code" ||
				!(strings.Contains(src, "nb.Exercise(") || strings.Contains(src, "nb.Try(")) {
				continue
			}
			exercises++
			if i+1 >= len(nb.Cells) {
				t.Errorf("%s: the exercise in cell %d has no solution cell after it", name, i+1)
				continue
			}
			sol := nb.Cells[i+1]
			src := sol.source(t)
			if sol.CellType != "code" || !sol.Metadata.Jupyter.SourceHidden || !(strings.Contains(src, "nb.Check(") ||
				strings.Contains(src, "nb.CheckClose(") || strings.Contains(src, "nb.Solved(")) {
				t.Errorf("%s: cell %d after the exercise in cell %d is not a folded solution that checks its answer",
					name, i+2, i+1)
			}
		}
		if exercises == 0 {
			t.Errorf("%s: no exercise (a cell calling nb.Exercise or nb.Try)", name)
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

// writes are the notebooks where the reader writes the core of the idea as code (issue 25):
// a stub that compiles, a check, and the folded solution.
var writes = []string{
	"00_attention_by_hand.ipynb", "01_qkv_projection.ipynb", "02_heads.ipynb",
	"03_sdpa_masks.ipynb", "04_mha.ipynb", "05_flash.ipynb", "06_parity.ipynb",
	"07_kvcache.ipynb", "08_xla.ipynb", "09_real_sentences.ipynb", "10_modern_attention.ipynb",
	"11_heads_learn.ipynb", "13_devices.ipynb",
}

var stubFunc = regexp.MustCompile(`(?m)^func (\w+)\(`)

// In each of writes, an exercise is three code cells in a row: the stub, a function whose body
// is panic(nb.WriteMe); the check, which calls nb.Try (it prints "not solved yet" for the stub,
// which scripts/notebooks.py requires of every run); and the folded solution, which defines the
// same function and checks it with nb.Solved (so a run proves the solution right). No cell above
// the stub defines the function: the answer is never shown before its exercise.
func TestReaderWritesTheCore(t *testing.T) {
	nbs := notebooks(t)
	for _, name := range writes {
		nb, ok := nbs[name]
		if !ok {
			t.Errorf("%s is missing", name)
			continue
		}
		var code []cell
		for _, c := range nb.Cells {
			if c.CellType == "code" {
				code = append(code, c)
			}
		}
		found := 0
		for i, c := range code {
			src := c.source(t)
			if !strings.Contains(src, "panic(nb.WriteMe)") {
				continue
			}
			found++
			m := stubFunc.FindStringSubmatch(src)
			if m == nil || i+2 >= len(code) {
				t.Errorf("%s: code cell %d panics with nb.WriteMe but is not a stub function followed by a check and a solution", name, i+1)
				continue
			}
			fn := m[1]
			defines := regexp.MustCompile(`(?m)^func ` + fn + `\(`)
			check, sol := code[i+1], code[i+2]
			switch {
			case c.Metadata.Jupyter.SourceHidden:
				t.Errorf("%s: the stub %s (code cell %d) is folded: the reader must see it", name, fn, i+1)
			case !strings.Contains(check.source(t), "nb.Try("):
				t.Errorf("%s: the code cell after the stub %s does not check it with nb.Try", name, fn)
			case check.Metadata.Jupyter.SourceHidden:
				t.Errorf("%s: the check of %s is folded", name, fn)
			case !sol.Metadata.Jupyter.SourceHidden || !defines.MatchString(sol.source(t)) ||
				!strings.Contains(sol.source(t), "nb.Solved("):
				t.Errorf("%s: the cell after the check of %s is not a folded solution defining %s and checking it with nb.Solved", name, fn, fn)
			}
			for j := range i {
				if defines.MatchString(code[j].source(t)) {
					t.Errorf("%s: code cell %d defines %s above its exercise (code cell %d): the answer shows before the question", name, j+1, fn, i+1)
				}
			}
		}
		if found == 0 {
			t.Errorf("%s: no exercise where the reader writes code (a stub function with panic(nb.WriteMe))", name)
		}
	}
}

// GoNB runs goimports on every cell, which adds an import for a package the cell uses but no
// cell imported, guessing it from the Go module cache; with another GoMLX version there (v0.28
// has core/tensors where v0.26 has pkg/core/tensors) the guess is wrong and the cell's go get
// fails. So every pkg.Name a cell uses names a package imported by that cell or one before it
// (GoNB keeps imports from cell to cell). make notebooks-ci catches the same with GoMLX v0.28.2
// in the module cache (Makefile, notebooks-goimports-trap).
func TestNotebooksImportWhatTheyUse(t *testing.T) {
	for name, nb := range notebooks(t) {
		var srcs []string
		for _, c := range nb.Cells {
			if c.CellType == "code" {
				srcs = append(srcs, c.source(t))
			} else {
				srcs = append(srcs, "")
			}
		}
		for _, p := range unimportedSelectors(srcs) {
			t.Errorf("%s: %s", name, p)
		}
	}
}

// unimportedSelectors parses the Go in cells (GoNB's %/! lines dropped; the part after %% is
// main's body) and returns one line per pkg.Name whose pkg is neither imported by that cell or
// an earlier one, nor declared in the notebook (a global of another cell), nor local to the cell.
func unimportedSelectors(cells []string) []string {
	declared := map[string]bool{}
	files := make([]*ast.File, len(cells))
	var problems []string
	for i, src := range cells {
		if src == "" {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), fmt.Sprintf("cell%d.go", i+1), goOfCell(src), parser.AllErrors)
		if err != nil {
			problems = append(problems, fmt.Sprintf("cell %d does not parse as Go: %v", i+1, err))
			continue
		}
		files[i] = f
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name != "main" {
					declared[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n.Name] = true
						}
					case *ast.TypeSpec:
						declared[s.Name.Name] = true
					}
				}
			}
		}
	}
	imported := map[string]bool{}
	for i, f := range files {
		if f == nil {
			continue
		}
		for _, imp := range f.Imports {
			imported[importName(imp)] = true
		}
		seen := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			//lint:ignore SA1019 the parser's own resolution is what a single cell needs
			if !ok || x.Obj != nil || declared[x.Name] || imported[x.Name] || seen[x.Name] {
				return true
			}
			seen[x.Name] = true
			problems = append(problems, fmt.Sprintf("cell %d uses %s.%s but no cell up to it imports %s: "+
				"import it explicitly (GoNB's goimports would guess a package from the module cache)",
				i+1, x.Name, sel.Sel.Name, x.Name))
			return true
		})
	}
	return problems
}

// goOfCell turns a GoNB cell into a Go file: lines starting with % or ! (and the continuation
// lines of a ! command ending in \) are dropped; what follows %% (or %main) is main's body.
func goOfCell(src string) string {
	var decls, body []string
	inMain, continued := false, false
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case continued:
			continued = strings.HasSuffix(trimmed, "\\")
			continue
		case trimmed == "%%" || trimmed == "%main":
			inMain = true
			continue
		case strings.HasPrefix(trimmed, "!"):
			continued = strings.HasSuffix(trimmed, "\\")
			continue
		case strings.HasPrefix(trimmed, "%"):
			continue
		}
		if inMain {
			body = append(body, line)
		} else {
			decls = append(decls, line)
		}
	}
	return "package main\n" + strings.Join(decls, "\n") + "\nfunc main() {\n" + strings.Join(body, "\n") + "\n}\n"
}

// importName is the name an import declares: its alias, else the last element of its path
// (before a /vN suffix, without a go- prefix). A dot or blank import declares none.
func importName(imp *ast.ImportSpec) string {
	if imp.Name != nil {
		return imp.Name.Name
	}
	parts := strings.Split(strings.Trim(imp.Path.Value, "`\""), "/")
	last := parts[len(parts)-1]
	if len(parts) > 1 && regexp.MustCompile(`^v[0-9]+$`).MatchString(last) {
		last = parts[len(parts)-2]
	}
	return strings.ReplaceAll(strings.TrimPrefix(last, "go-"), "-", "_")
}

func TestUnimportedSelectors(t *testing.T) {
	cells := []string{
		"!*go mod edit -replace a=b \\\n\t-require a@v0.0.0\n%goflags \"-ldflags=-s -w\"",
		"import (\n\tt2 \"github.com/gomlx/gomlx/pkg/core/tensors\"\n\t\"math/rand/v2\"\n)\n\nvar cases = []string{}\n" +
			"func f(x *t2.Tensor) { _ = rand.IntN(1) }",
		"%%\nctx := struct{ A int }{}\nfmt.Println(ctx.A, len(cases.x))\n_ = tensors.FromValue(1)",
		"import \"fmt\"",
	}
	got := unimportedSelectors(cells)
	want := []string{
		"cell 3 uses fmt.Println but no cell up to it imports fmt: import it explicitly (GoNB's goimports would guess a package from the module cache)",
		"cell 3 uses tensors.FromValue but no cell up to it imports tensors: import it explicitly (GoNB's goimports would guess a package from the module cache)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("unimportedSelectors:\n got %q\nwant %q", got, want)
	}
}
