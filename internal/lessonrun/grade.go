package lessonrun

// mhalab lessons verify (maintainers, CI) and grade (teachers).

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mhalab/mhalab/internal/atomicfile"

	"github.com/mhalab/mhalab/lessons"
	"github.com/mhalab/mhalab/lessons/solutions"
)

// verify checks the exercises themselves: every file matches the manifest, every stub compiles
// and fails its grader, and every solution passes it.
func (env *runner) verify(ctx context.Context) error {
	start := time.Now()
	var problems []string
	manifest := lessons.Manifest()
	names := slices.Sorted(maps.Keys(manifest))
	for _, name := range names {
		data, err := os.ReadFile(env.inLessons(name))
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("lessons/%s: %v", name, err))
		case lessons.GitBlobHash(data) != manifest[name]:
			problems = append(problems, fmt.Sprintf("lessons/%s differs from lessons/manifest.go: after changing it on purpose, run `go generate ./lessons`", name))
		}
	}
	if !solutions.Available() {
		return fmt.Errorf("verify: this mhalab carries no reference solutions (built from a student's copy): build it from the full repository (go run ./cmd/mhalab lessons verify)")
	}
	// The solutions are embedded in this binary (lessons/solutions): each one goes into its
	// exercise's package in place of the stub, through go build -overlay.
	tmp, err := os.MkdirTemp("", "mhalab-verify-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	overlay := map[string]string{}
	for _, e := range lessons.Exercises() {
		src, err := solutions.Source(e.Dir, e.Solution)
		if err != nil {
			problems = append(problems, fmt.Sprintf("lessons/solutions/files/%s: %v", e.Path(e.Solution), err))
			continue
		}
		for _, p := range checkImports(e, map[string][]byte{e.Solution: src}) {
			problems = append(problems, fmt.Sprintf("%s solution: %s", e.Dir, p))
		}
		copyPath := filepath.Join(tmp, e.Dir, e.Solution)
		if err := writeFile(copyPath, src); err != nil {
			return err
		}
		overlay[env.inLessons(e.Path(e.File))] = ""
		overlay[env.inLessons(e.Path(e.Solution))] = copyPath
	}
	fmt.Fprintf(env.stdout, "mhalab lessons verify: %d exercises on backend %s (stubs, then solutions), random inputs from seed %s (--seed repeats them)\n\n", len(lessons.Exercises()), env.backend, env.seed)
	stubs := env.runGoTest(ctx, goTestRun{exercises: lessons.Exercises()})
	solved := env.runGoTest(ctx, goTestRun{exercises: lessons.Exercises(), tags: []string{"solution"}, overlay: overlay})
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EXERCISE\tSTUB (must fail)\tSOLUTION (must pass)\t")
	for i, e := range lessons.Exercises() {
		st, so := stubs[i], solved[i]
		stubOK := st.status == "fail" && len(st.checks) > 0 && !allPassed(st.checks)
		stubCell := "fails: " + st.checksSummary() + " checks pass"
		if !stubOK {
			stubCell = "WRONG: " + st.status
			why := st.reason
			if st.status == "pass" {
				why = "the stub passes every check: the grader cannot tell it from a solution"
			}
			problems = append(problems, fmt.Sprintf("%s stub: %s %s", e.Dir, st.status, why))
		}
		solCell := "passes: " + so.checksSummary()
		if !so.passed() {
			solCell = "WRONG: " + so.status
			problems = append(problems, fmt.Sprintf("%s solution: %s: %s", e.Dir, so.status, so.reason))
			for _, c := range so.checks {
				if !c.passed {
					problems = append(problems, fmt.Sprintf("    %s: %s", c.name, strings.Join(c.lines, " | ")))
				}
			}
			for _, line := range so.build {
				problems = append(problems, "    "+line)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", e.Dir, stubCell, solCell)
	}
	_ = tw.Flush()
	elapsed := time.Since(start).Round(100 * time.Millisecond)
	if len(problems) > 0 {
		fmt.Fprintf(env.stdout, "\nverify FAILED (%s):\n", elapsed)
		for _, p := range problems {
			fmt.Fprintf(env.stdout, "  - %s\n", p)
		}
		return fmt.Errorf("verify: %d problems", len(problems))
	}
	fmt.Fprintf(env.stdout, "\nverify: every stub fails and every solution passes (%d exercises, %s)\n", len(lessons.Exercises()), elapsed)
	return nil
}

// studentGrade is one row of the grade table.
type studentGrade struct {
	name    string
	results []*result // one per exercise graded, in order
	notes   []string
}

func (g *studentGrade) total() int {
	n := 0
	for _, r := range g.results {
		if r.passed() {
			n++
		}
	}
	return n
}

// grade grades each student folder (a copy of lessons/) on the given exercises, prints a
// markdown table and writes a CSV. A submission that does not compile, crashes, hangs or lacks
// files fails that exercise with the reason; the next one is graded all the same.
func (env *runner) grade(ctx context.Context, dirs []string, exercises []lessons.Exercise, csvPath string, gs gradescopeOutput) error {
	// Every folder is checked before anything is graded or written: a typo in a path is an
	// error, not a student with 0 points.
	for _, dir := range dirs {
		if err := checkStudentDir(dir, exercises); err != nil {
			return err
		}
	}
	// So are the files to write: only over a previous report, never in a student's folder.
	if err := checkReportOutputs(gs.outputs(csvPath), dirs); err != nil {
		return err
	}
	// Each student's code runs in the sandbox; without one, a class is not graded by default.
	if !env.noSandbox && !isolation().Confined() && len(dirs) > 1 {
		return fmt.Errorf("grade: no sandbox can be set up on this machine (%s), so one student's code could read or change another's work and your files: grade one folder at a time, in a container or a throwaway account, or give --no-sandbox to accept that", isolation())
	}
	fmt.Fprintf(env.stderr, "mhalab lessons grade: %s\n", env.isolationLine())
	fmt.Fprintf(env.stderr, "mhalab lessons grade: random inputs from seed %s (--seed %s repeats this grading)\n", env.seed, env.seed)
	start := time.Now()
	notes, err := env.restore(protectedFiles(exercises))
	for _, n := range notes {
		fmt.Fprintf(env.stderr, "mhalab lessons grade: %s\n", n)
	}
	if err != nil {
		return err
	}
	// The judges (the graders with the original stubs) are the same for every student: built once.
	jdir, err := os.MkdirTemp("", "mhalab-judges-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(jdir)
	if env.judges, err = env.buildJudges(ctx, exercises, jdir); err != nil {
		return err
	}
	defer func() { env.judges = nil }()
	var grades []*studentGrade
	seen := map[string]int{}
	for _, dir := range dirs {
		name := filepath.Base(filepath.Clean(dir))
		if seen[name]++; seen[name] > 1 {
			name = fmt.Sprintf("%s (%d)", name, seen[name])
		}
		fmt.Fprintf(env.stderr, "grading %s (%s) …", name, dir)
		g := env.gradeStudent(ctx, name, dir, exercises)
		fmt.Fprintf(env.stderr, " %d/%d\n", g.total(), len(exercises))
		grades = append(grades, g)
		if ctx.Err() != nil {
			return fmt.Errorf("grading stopped")
		}
	}
	gradeTable(env.stdout, grades, exercises)
	fmt.Fprintf(env.stdout, "\nThe checks' random inputs came from seed %s (`--seed %s` repeats them). Isolation: %s.\n", env.seed, env.seed, env.isolationLine())
	if err := gradeCSV(csvPath, grades, exercises); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "\nCSV written to %s\n", csvPath)
	if gs.path != "" {
		if err := writeGradescope(gs.path, grades[0], gs.scoring, time.Since(start)); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "Gradescope results written to %s\n", gs.path)
	}
	return nil
}

// checkStudentDir returns an error unless dir is a folder holding at least one of the
// exercises' folders, directly (a copy of lessons/) or in lessons/ (a copy of the repository).
func checkStudentDir(dir string, exercises []lessons.Exercise) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("grade: student folder %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("grade: student folder %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("grade: %s is not a folder: give each student's copy of lessons/ (or of the repository)", dir)
	}
	for _, e := range exercises {
		if isDir(filepath.Join(dir, e.Dir)) || isDir(filepath.Join(dir, "lessons", e.Dir)) {
			return nil
		}
	}
	return fmt.Errorf("grade: %s holds none of the exercise folders (%s, …) nor lessons/: give each student's copy of lessons/ (or of the repository)", dir, exercises[0].Dir)
}

// gradeStudent runs the graders of the teacher's repository against one student's files. The
// student's .go files (except tests, the solution and the given files) are copied to a
// temporary folder and overlaid on the exercise packages (go build -overlay); the repository's
// own stubs are left out; graders, given files and fixtures are the originals.
func (env *runner) gradeStudent(ctx context.Context, name, dir string, exercises []lessons.Exercise) *studentGrade {
	g := &studentGrade{name: name}
	base := dir
	if isDir(filepath.Join(dir, "lessons")) && !isDir(filepath.Join(dir, exercises[0].Dir)) {
		base = filepath.Join(dir, "lessons") // a copy of the whole repository
	}
	results := map[string]*result{}
	missing := func(e lessons.Exercise, why string) {
		results[e.Dir] = &result{exercise: e, status: "missing", reason: why}
	}
	tmp, err := os.MkdirTemp("", "mhalab-grade-*")
	if err != nil {
		for _, e := range exercises {
			missing(e, err.Error())
		}
		g.results = ordered(results, exercises)
		return g
	}
	defer os.RemoveAll(tmp)
	overlay := map[string]string{}
	var run []lessons.Exercise
	for _, e := range exercises {
		sdir := filepath.Join(base, e.Dir)
		if !isDir(sdir) {
			missing(e, fmt.Sprintf("the folder %s is missing", e.Dir))
			continue
		}
		// The file the student edits was deleted: nothing to grade (and a compiler error about
		// the grader's undefined names would hide why).
		if _, err := os.Lstat(filepath.Join(sdir, e.File)); errors.Is(err, os.ErrNotExist) {
			missing(e, "missing "+e.Path(e.File))
			continue
		}
		repoDir := env.inLessons(e.Dir)
		provided := map[string]bool{}
		entries, err := os.ReadDir(sdir)
		if err != nil {
			missing(e, err.Error())
			continue
		}
		sawGrader := false
		for _, entry := range entries {
			fname := entry.Name()
			if !strings.HasSuffix(fname, ".go") {
				continue
			}
			src := filepath.Join(sdir, fname)
			info, err := os.Lstat(src)
			if err != nil || !info.Mode().IsRegular() {
				g.notes = append(g.notes, fmt.Sprintf("%s/%s: skipped (not a regular file)", e.Dir, fname))
				continue
			}
			switch {
			case fname == e.Grader || slices.Contains(e.Given, fname):
				sawGrader = sawGrader || fname == e.Grader
				if orig, err := env.original(e.Path(fname)); err == nil && !sameFile(src, orig) {
					g.notes = append(g.notes, fmt.Sprintf("%s/%s differs from the original: graded with the original", e.Dir, fname))
				}
			case strings.HasSuffix(fname, "_test.go"):
				g.notes = append(g.notes, fmt.Sprintf("%s/%s: ignored (only the grader runs)", e.Dir, fname))
			case fname == e.Solution:
				// A copy made before the solutions moved out of the exercises' folders.
				g.notes = append(g.notes, fmt.Sprintf("%s/%s: ignored (the reference solution's name; it does not belong in a student's copy)", e.Dir, fname))
			case info.Size() > 1<<20:
				g.notes = append(g.notes, fmt.Sprintf("%s/%s: skipped (larger than 1 MiB)", e.Dir, fname))
			default:
				dst := filepath.Join(tmp, e.Dir, fname)
				if err := copyFile(src, dst); err != nil {
					g.notes = append(g.notes, fmt.Sprintf("%s/%s: cannot read it (%v)", e.Dir, fname, err))
					continue
				}
				overlay[filepath.Join(repoDir, fname)] = dst
				provided[fname] = true
			}
		}
		graded := map[string][]byte{}
		for fname := range provided {
			if data, err := os.ReadFile(filepath.Join(tmp, e.Dir, fname)); err == nil {
				graded[e.Path(fname)] = data
			}
		}
		if refused := checkImports(e, graded); len(refused) > 0 {
			results[e.Dir] = refusedResult(e, refused)
			continue
		}
		if !sawGrader {
			g.notes = append(g.notes, fmt.Sprintf("%s/%s was missing: graded with the original", e.Dir, e.Grader))
		}
		// The repository's own files that the student did not hand in are left out of the build.
		repoFiles, _ := filepath.Glob(filepath.Join(repoDir, "*.go"))
		for _, f := range repoFiles {
			fname := filepath.Base(f)
			if fname != e.Grader && !slices.Contains(e.Given, fname) && !provided[fname] {
				overlay[f] = ""
			}
		}
		run = append(run, e)
	}
	if len(run) > 0 {
		for _, r := range env.runGoTest(ctx, goTestRun{exercises: run, overlay: overlay}) {
			// Compiler messages name the temporary copies: show the student's paths.
			r.reason = studentPaths(r.reason, env.root, tmp)
			for i := range r.build {
				r.build[i] = studentPaths(r.build[i], env.root, tmp)
			}
			results[r.exercise.Dir] = r
		}
	}
	g.results = ordered(results, exercises)
	return g
}

// studentPaths rewrites the paths of the temporary copies in a compiler message (go
// prints them absolute, or relative to the repository) as paths in the student's folder:
// "01_linear/linear.go:7:1: ...".
func studentPaths(msg, root, tmp string) string {
	if rel, err := filepath.Rel(root, tmp); err == nil {
		msg = strings.ReplaceAll(msg, rel+string(filepath.Separator), "")
	}
	return strings.ReplaceAll(msg, tmp+string(filepath.Separator), "")
}

func ordered(results map[string]*result, exercises []lessons.Exercise) []*result {
	out := make([]*result, len(exercises))
	for i, e := range exercises {
		out[i] = results[e.Dir]
	}
	return out
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func sameFile(path string, want []byte) bool {
	got, err := os.ReadFile(path)
	return err == nil && bytes.Equal(got, want)
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return writeFile(dst, data)
}

// writeFile writes data to path, making its folder first.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// shortName is the column title of an exercise: its number.
func shortName(e lessons.Exercise) string { return fmt.Sprintf("%02d", e.Number) }

// gradeTable writes the markdown table and, under it, why each failure failed.
func gradeTable(w io.Writer, grades []*studentGrade, exercises []lessons.Exercise) {
	header := []string{"student"}
	align := []string{"---"}
	for _, e := range exercises {
		header = append(header, shortName(e))
		align = append(align, ":-:")
	}
	header = append(header, "total")
	align = append(align, "--:")
	fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(header, " | "), strings.Join(align, "|"))
	for _, g := range grades {
		row := []string{markdownEscape(g.name)}
		for _, r := range g.results {
			if r.passed() {
				row = append(row, "✓")
			} else {
				row = append(row, "✗")
			}
		}
		row = append(row, fmt.Sprintf("%d/%d", g.total(), len(exercises)))
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintf(w, "\nExercises: %s\n", legend(exercises))
	// Per student: every exercise that did not pass, why, and which checks failed.
	for _, g := range grades {
		fmt.Fprintf(w, "\n### %s: %d/%d\n\n", markdownEscape(g.name), g.total(), len(exercises))
		if g.total() == len(exercises) {
			fmt.Fprintf(w, "Every graded exercise passes.\n")
		}
		for _, r := range g.results {
			if r.passed() {
				continue
			}
			failed := failedChecks(r)
			switch {
			case r.status == "fail" && len(failed) > 0:
				fmt.Fprintf(w, "- %s: fail, %s checks pass; failed checks:\n", r.exercise.Dir, r.checksSummary())
			default:
				fmt.Fprintf(w, "- %s: %s: %s\n", r.exercise.Dir, r.status, markdownEscape(r.reason))
				if len(failed) > 0 {
					fmt.Fprintf(w, "  failed checks:\n")
				}
			}
			for _, c := range failed {
				msg := ""
				if len(c.lines) > 0 {
					msg = ": " + markdownEscape(shorten(strings.TrimSpace(c.lines[0]), 160))
				}
				fmt.Fprintf(w, "  - %s%s\n", c.name, msg)
			}
			for _, line := range r.refused[min(1, len(r.refused)):] {
				fmt.Fprintf(w, "  - %s\n", markdownEscape(line))
			}
		}
		for _, n := range g.notes {
			fmt.Fprintf(w, "- note: %s\n", markdownEscape(n))
		}
	}
}

// failedChecks returns the checks of r that ran and failed.
func failedChecks(r *result) []*checkResult {
	var out []*checkResult
	for _, c := range r.checks {
		if !c.passed {
			out = append(out, c)
		}
	}
	return out
}

// shorten cuts s to n characters, with an ellipsis.
func shorten(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func legend(exercises []lessons.Exercise) string {
	var parts []string
	for _, e := range exercises {
		parts = append(parts, fmt.Sprintf("%s %s", shortName(e), e.Dir))
	}
	return strings.Join(parts, ", ")
}

// markdownEscape keeps text from breaking a markdown table.
func markdownEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// gradeCSV writes student, one pass/fail column per exercise, total, notes (why each failure
// failed), failed checks (exercise: check, check; ...).
func gradeCSV(path string, grades []*studentGrade, exercises []lessons.Exercise) error {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	header := []string{"student"}
	for _, e := range exercises {
		header = append(header, e.Dir)
	}
	_ = cw.Write(append(header, "total", "notes", "failed checks"))
	for _, g := range grades {
		row := []string{g.name}
		var why []string
		for _, r := range g.results {
			if r.passed() {
				row = append(row, "pass")
				continue
			}
			row = append(row, "fail")
			why = append(why, fmt.Sprintf("%s: %s: %s", r.exercise.Dir, r.status, r.reason))
		}
		why = append(why, g.notes...)
		var failed []string
		for _, r := range g.results {
			if r.passed() {
				continue
			}
			var names []string
			for _, c := range failedChecks(r) {
				names = append(names, c.name)
			}
			if len(names) == 0 {
				names = []string{"(" + r.status + ")"}
			}
			failed = append(failed, r.exercise.Dir+": "+strings.Join(names, ", "))
		}
		_ = cw.Write(append(row, fmt.Sprint(g.total()), strings.Join(why, "; "), strings.Join(failed, "; ")))
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b.Bytes()); err != nil {
		return fmt.Errorf("writing the CSV: %w", err)
	}
	return nil
}
