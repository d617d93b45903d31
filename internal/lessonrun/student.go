package lessonrun

// list, hint, reset and solution: the student's subcommands besides check and watch.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/mhalab/mhalab/internal/atomicfile"

	"github.com/mhalab/mhalab/lessons"
	"github.com/mhalab/mhalab/lessons/solutions"
)

func (env *runner) list() error {
	p := env.loadProgress()
	done := 0
	for _, e := range lessons.Exercises() {
		if p.Exercises[e.Dir].Passed {
			done++
		}
	}
	next, hasNext := env.next()
	fmt.Fprintf(env.stdout, "mhalab lessons: %d of %d exercises done\n\n", done, len(lessons.Exercises()))
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	for _, e := range lessons.Exercises() {
		entry, tried := p.Exercises[e.Dir]
		mark, note := "✗", "not tried yet"
		if tried {
			note = entry.Status
			if entry.Checks != "" && !entry.Passed {
				note += " (" + entry.Checks + " checks pass)"
			}
		}
		if entry.Passed {
			mark, note = "✓", "done"
		}
		if hasNext && e.Dir == next.Dir {
			note += "   ← next"
		}
		fmt.Fprintf(tw, "  %s\t%2d\t%s\t%s\t%s\n", mark, e.Number, e.Dir, e.Title, note)
	}
	_ = tw.Flush()
	fmt.Fprintln(env.stdout)
	if hasNext {
		fmt.Fprintf(env.stdout, "Next: exercise %d. Edit lessons/%s, then run `mhalab lessons check %d`\n", next.Number, next.Path(next.File), next.Number)
		fmt.Fprintf(env.stdout, "(or `mhalab lessons watch`, which checks it every time you save). README: lessons/%s\n", next.Path("README.md"))
	} else {
		fmt.Fprintln(env.stdout, "All done. Well done!")
	}
	fmt.Fprintf(env.stdout, "Progress is kept in lessons/%s: delete it to start over.\n", ProgressFile)
	return nil
}

func (env *runner) hint(e lessons.Exercise) error {
	data, err := os.ReadFile(env.inLessons(e.Path("hint.md")))
	if err != nil {
		if data, err = env.original(e.Path("hint.md")); err != nil {
			return err
		}
	}
	fmt.Fprintf(env.stdout, "%s\n", bytes.TrimSpace(data))
	fmt.Fprintf(env.stdout, "\nThe goal, formula and shapes: lessons/%s; the story: %s\n", e.Path("README.md"), e.Notebook)
	return nil
}

func (env *runner) reset(e lessons.Exercise, yes bool, in io.Reader) error {
	stub := e.Path(e.File)
	if !yes {
		fmt.Fprintf(env.stdout, "Reset exercise %d? lessons/%s goes back to the original stub: your changes to it are lost. [y/N] ", e.Number, stub)
		answer, _ := bufio.NewReader(in).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(env.stdout, "\nNothing changed.")
			return nil
		}
	}
	data, err := env.original(stub)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(env.inLessons(stub), data); err != nil {
		return err
	}
	notes, err := env.restore(e.Protected())
	for _, n := range notes {
		fmt.Fprintln(env.stdout, n)
	}
	if err != nil {
		return err
	}
	p := env.loadProgress()
	if _, ok := p.Exercises[e.Dir]; ok {
		delete(p.Exercises, e.Dir)
		data, _ := json.MarshalIndent(p, "", "  ")
		_ = os.WriteFile(env.progressPath(), append(data, '\n'), 0o644)
	}
	fmt.Fprintf(env.stdout, "lessons/%s is the original stub again.\n", stub)
	return nil
}

// solution prints the reference solution of e once the student has passed it (the progress file
// says so). It is a courtesy gate, as in rustlings, not a lock: the solutions are in the binary.
func (env *runner) solution(e lessons.Exercise) error {
	if !env.loadProgress().Exercises[e.Dir].Passed {
		return fmt.Errorf("exercise %d is not done yet: its solution is shown once `mhalab lessons check %d` passes", e.Number, e.Number)
	}
	src, err := solutions.Source(e.Dir, e.Solution)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "// The reference solution of exercise %d (%s), to compare with lessons/%s:\n\n", e.Number, e.Dir, e.Path(e.File))
	_, err = env.stdout.Write(solutions.AsStudentFile(src))
	return err
}
