package lessonrun

// mhalab lessons check and watch: grading the student's working tree, with a report a student
// can act on.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mhalab/mhalab/lessons"
	"github.com/mhalab/mhalab/lessons/solutions"
)

// check restores the grader and given files of e, runs the grader on the working tree, prints
// the report and records the result in the progress file.
func (env *runner) check(ctx context.Context, e lessons.Exercise) *result {
	notes, err := env.restore(protectedFiles([]lessons.Exercise{e}))
	if err != nil {
		res := &result{exercise: e, status: "error", reason: err.Error(), notes: notes}
		env.report(res)
		return res
	}
	// Only the grader runs: other test files of the folder are left out of the build.
	overlay := map[string]string{}
	dir := env.inLessons(e.Dir)
	extra, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	for _, f := range extra {
		if filepath.Base(f) != e.Grader {
			overlay[f] = ""
			notes = append(notes, fmt.Sprintf("ignoring lessons/%s: only the grader (%s) runs.", e.Path(filepath.Base(f)), e.Grader))
		}
	}
	// The graded files: the folder's .go files but the tests and the given files.
	graded := map[string][]byte{}
	sources, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range sources {
		name := filepath.Base(f)
		if strings.HasSuffix(name, "_test.go") || slices.Contains(e.Given, name) {
			continue
		}
		if data, err := os.ReadFile(f); err == nil {
			graded["lessons/"+e.Path(name)] = data
		}
	}
	var res *result
	if refused := checkImports(e, graded); len(refused) > 0 {
		res = refusedResult(e, refused)
	} else {
		res = env.runGoTest(ctx, goTestRun{exercises: []lessons.Exercise{e}, overlay: overlay})[0]
	}
	res.notes = append(notes, res.notes...)
	env.report(res)
	if res.status != "stopped" {
		env.record(e, res)
	}
	return res
}

// refusedResult is the result of an exercise whose graded files use what it forbids: not run.
func refusedResult(e lessons.Exercise, refused []string) *result {
	return &result{exercise: e, status: "refused", reason: refused[0], refused: refused}
}

// report prints the result of one exercise for its student.
func (env *runner) report(r *result) {
	e, w := r.exercise, env.stdout
	fmt.Fprintf(w, "Exercise %d of %d · %s · %s\n", e.Number, len(lessons.Exercises()), e.Dir, e.Title)
	for _, n := range r.notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	switch r.status {
	case "does not compile":
		fmt.Fprintf(w, "  ✗ lessons/%s does not compile:\n", e.Dir)
		for i, line := range r.build {
			if i == 12 {
				fmt.Fprintf(w, "      … (%d more lines)\n", len(r.build)-i)
				break
			}
			fmt.Fprintf(w, "      %s\n", line)
		}
		if strings.Contains(strings.Join(r.build, "\n"), e.Grader) {
			fmt.Fprintf(w, "  Errors in %s mean that a name or a signature differs from the stub's: keep them as given.\n", e.Grader)
		}
		fmt.Fprintf(w, "  Fix the first error, save, and check again.\n")
		return
	case "refused":
		fmt.Fprintf(w, "  ✗ not graded: your code uses what this exercise asks you to write:\n")
		for _, line := range r.refused {
			fmt.Fprintf(w, "      %s\n", line)
		}
		fmt.Fprintf(w, "  Remove those uses, write the code with GoMLX's graph operations, save, and check again. Stuck? `mhalab lessons hint %d`\n", e.Number)
		return
	case "error", "stopped":
		fmt.Fprintf(w, "  ✗ %s\n", r.reason)
		return
	}
	for _, c := range r.checks {
		mark := "✓"
		if !c.passed {
			mark = "✗"
		}
		fmt.Fprintf(w, "  %s %s\n", mark, c.name)
		if c.passed {
			continue
		}
		if (r.status == "time limit" || r.status == "crashed") && hasCrash(c.lines) {
			fmt.Fprintf(w, "      (this check was running when the program was stopped)\n")
			continue
		}
		for i, line := range c.lines {
			if i == 14 {
				fmt.Fprintf(w, "        …\n")
				break
			}
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
	switch r.status {
	case "pass":
		fmt.Fprintf(w, "✓ All %d checks pass: exercise %d is done!", len(r.checks), e.Number)
		if next, ok := lessons.Lookup(e.Number + 1); ok {
			fmt.Fprintf(w, " Next: exercise %d, lessons/%s (`mhalab lessons check %d`).\n", next.Number, next.Path(next.File), next.Number)
		} else {
			fmt.Fprintf(w, " That was the last one.\n")
		}
		if solutions.Available() {
			fmt.Fprintf(w, "  Compare with the reference solution: `mhalab lessons solution %d`.\n", e.Number)
		}
		return
	case "time limit", "crashed", "memory limit", "process limit":
		if r.status == "crashed" {
			fmt.Fprintf(w, "  ✗ Your code crashed: %s\n", r.reason)
		} else {
			fmt.Fprintf(w, "  ✗ Your code %s\n", r.reason)
		}
		if r.status == "crashed" {
			all := append([]string{}, r.output...)
			for _, c := range r.checks {
				all = append(all, c.lines...)
			}
			for _, line := range crashLines(all, 6) {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	summary := r.checksSummary()
	if summary == "" {
		summary = "No"
	}
	if r.seed != "" {
		fmt.Fprintf(w, "  (The checks' random inputs came from seed %s: `mhalab lessons check %d --seed %s` repeats them.)\n", r.seed, e.Number, r.seed)
	}
	fmt.Fprintf(w, "%s checks pass. Edit lessons/%s, save, and check again. Stuck? `mhalab lessons hint %d`\n", summary, e.Path(e.File), e.Number)
}

// hasCrash reports whether output holds a panic or fatal error of the test program.
func hasCrash(lines []string) bool {
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "panic: ") || strings.HasPrefix(t, "fatal error: ") {
			return true
		}
	}
	return false
}

// crashLines returns the places in the student's files (file:line) that the stack of a crash
// passes through, at most n, outermost last.
func crashLines(output []string, n int) []string {
	var out []string
	for i, line := range output {
		if !hasCrash([]string{line}) {
			continue
		}
		for _, l := range output[i+1:] {
			t := strings.TrimSpace(l)
			at := strings.Index(t, "/lessons/")
			if at < 0 || !strings.Contains(t, ".go:") || strings.Contains(t, "_test.go") || strings.Contains(t, "/internal/grader/") {
				continue
			}
			loc, _, _ := strings.Cut(t[at+1:], " ") // "lessons/01_linear/linear.go:8"
			if len(out) > 0 && out[len(out)-1] == "at "+loc {
				continue
			}
			if out = append(out, "at "+loc); len(out) == n {
				break
			}
		}
		return out
	}
	return out
}

// watch checks the current exercise (the first not done) and checks it again whenever a file
// of its folder is saved; when it passes it moves on to the next. Ctrl-C (ctx) stops it.
func (env *runner) watch(ctx context.Context, interval time.Duration) error {
	e, ok := env.next()
	if !ok {
		fmt.Fprintln(env.stdout, "Every exercise is done: nothing to watch. (Delete lessons/"+ProgressFile+" to start over.)")
		return nil
	}
	clear := false
	for {
		if clear {
			env.clearScreen()
		}
		res := env.check(ctx, e)
		if ctx.Err() != nil {
			fmt.Fprintln(env.stdout, "\nwatch stopped.")
			return nil
		}
		if res.passed() {
			next, ok := env.next()
			if !ok {
				fmt.Fprintln(env.stdout, "\nEvery exercise is done. Well done!")
				return nil
			}
			fmt.Fprintf(env.stdout, "\n——— on to exercise %d ———\n\n", next.Number)
			e, clear = next, false
			continue
		}
		fmt.Fprintf(env.stdout, "\nWatching lessons/%s/ : save a file to check again (Ctrl-C to stop).\n", e.Dir)
		if !waitForChange(ctx, env.inLessons(e.Dir), interval) {
			fmt.Fprintln(env.stdout, "\nwatch stopped.")
			return nil
		}
		clear = true
	}
}

// clearScreen clears a terminal (and does nothing when the output is not one).
func (env *runner) clearScreen() {
	if f, ok := env.stdout.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprint(f, "\033[H\033[2J")
			return
		}
	}
	fmt.Fprintln(env.stdout)
}

// snapshot is the size and modification time of every file of a folder.
func snapshot(dir string) map[string]string {
	out := map[string]string{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if info, err := e.Info(); err == nil {
			out[e.Name()] = fmt.Sprintf("%d %d", info.Size(), info.ModTime().UnixNano())
		}
	}
	return out
}

// waitForChange polls dir until a file appears, disappears or changes (true) or ctx ends (false).
func waitForChange(ctx context.Context, dir string, interval time.Duration) bool {
	before := snapshot(dir)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		now := snapshot(dir)
		changed := len(now) != len(before)
		for name, v := range now {
			changed = changed || before[name] != v
		}
		if changed {
			// Let an editor finish writing (write, rename) before grading.
			select {
			case <-ctx.Done():
				return false
			case <-time.After(min(interval, 200*time.Millisecond)):
			}
			return true
		}
	}
}
