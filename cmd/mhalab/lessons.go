package main

// mhalab lessons: the classroom exercises of lessons/ (internal/commands/lessons, which runs
// internal/lessonrun). This file holds its help and parses its flags.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mhalab/mhalab/internal/cli"
	"github.com/mhalab/mhalab/internal/commands/lessons"
	"github.com/mhalab/mhalab/internal/lessonrun"
)

const lessonsUsage = `usage: mhalab lessons <subcommand> [flags]

  list                 progress (✓ done, ✗ not yet) and the next exercise (the default)
  check [N]            grade exercise N (default: the next one not done)
  hint N               the guiding questions of exercise N
  watch                check the current exercise again whenever one of its files is saved;
                       moves on when it passes; Ctrl-C stops
  reset N [-y]         put back the stub of exercise N (your changes are lost; asks first)
  solution N           the reference solution of exercise N, once you have passed it
  verify               for maintainers (CI): every stub fails and every solution passes
  grade [-o FILE] [--exercises 1,3] DIR...
                       for teachers: each DIR is a student's copy of lessons/ (or of the
                       repository); prints a report and writes a CSV (default grades.csv)
  grade --gradescope FILE [--scoring exercise|checks] [--exercises 1,3] DIR
                       also writes FILE, the results.json of Gradescope's autograders, for
                       the one submission DIR (scoring: 1 point per exercise, all or nothing
                       (exercise, the default) or split over its checks (checks))
  gradescope [--exercises 1,3] [--scoring exercise|checks] [-o autograder.zip]
                       for teachers: the autograder zip to upload to Gradescope (setup.sh,
                       run_autograder, this mhalab without the solutions, the lessons)

  -o and --gradescope replace only a previous report of mhalab (never another file, never
  a file in a student's folder), through a temporary file and a rename.

flags (any subcommand):
  --backend B          go (default: nothing to install) or xla:cpu
  --timeout D          time limit (wall and CPU) for running the code of one exercise (default 60s)
  --memory SIZE        memory limit of the program running a student's code (default 4GiB)
  --seed N             the seed of the checks' random inputs (default: a fresh one every run;
                       the report prints it, so a run can be repeated)
  --no-sandbox         run the students' code without the sandbox (grade refuses several
                       students when no sandbox can be set up, unless this is given)
  --root DIR           the mhalab repository (default: found from the current folder)

A student's code runs in its own process, in a sandbox where one is available (Linux:
Landlock, namespaces, a separate uid as root, resource limits): it can only write its own
temporary folder, reach no network, and its process tree is killed at the end. That process
computes outputs; a separate process decides every check. lessons/README.md says what is
and is not guaranteed.

Progress is kept in lessons/.mhalab-progress.json: delete it to start over.
lessons/README.md has the students' and the teachers' guides.
`

// parseLessons parses the subcommand and the flags of `mhalab lessons`.
func parseLessons(_ command, args []string, stdout io.Writer) (runner, error) {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	if sub == "help" {
		fmt.Fprint(stdout, lessonsUsage)
		return nil, flag.ErrHelp
	}
	fs := newFlagSet("lessons " + sub)
	o := lessons.Options{Sub: sub}
	fs.StringVar(&o.Root, "root", "", "the mhalab repository (default: found from the current folder)")
	fs.StringVar(&o.Backend, "backend", "go", "backend of the exercises: go or xla:cpu")
	fs.DurationVar(&o.Timeout, "timeout", 60*time.Second, "time limit for running the code of one exercise")
	fs.DurationVar(&o.CompileTimeout, "compile-timeout", 5*time.Minute, "time allowed for compiling, on top of --timeout")
	fs.Var(bytesValue{&o.MemoryFlag}, "memory", "memory limit of the program running a student's code (e.g. 4GiB)")
	fs.Uint64Var(&o.SeedValue, "seed", 0, "seed of the checks' random inputs (default: a fresh one)")
	fs.BoolVar(&o.NoSandbox, "no-sandbox", false, "run the students' code without the sandbox")
	switch sub {
	case "reset":
		fs.BoolVar(&o.Yes, "y", false, "do not ask for confirmation")
		fs.BoolVar(&o.Yes, "yes", false, "do not ask for confirmation")
	case "grade":
		fs.StringVar(&o.Output, "o", "grades.csv", "CSV file to write")
		fs.StringVar(&o.Exercises, "exercises", "", "comma-separated exercise numbers to grade (default: all)")
		fs.StringVar(&o.Gradescope, "gradescope", "", "also write this Gradescope results.json (exactly one DIR)")
		fs.StringVar(&o.Scoring, "scoring", lessonrun.ScoringExercise, "Gradescope scoring: exercise (all or nothing) or checks (split over the checks)")
	case "gradescope":
		fs.StringVar(&o.Output, "o", "autograder.zip", "the autograder zip to write")
		fs.StringVar(&o.Exercises, "exercises", "", "comma-separated exercise numbers to grade (default: all)")
		fs.StringVar(&o.Scoring, "scoring", lessonrun.ScoringExercise, "scoring: exercise (all or nothing) or checks (split over the checks)")
	case "watch":
		fs.DurationVar(&o.Interval, "interval", 500*time.Millisecond, "how often to look for saved files")
	}
	pos, err := lessonsParseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, lessonsUsage)
		return nil, err
	}
	if err != nil {
		return nil, &cli.UsageError{Msg: err.Error()}
	}
	o.Args, o.Given = pos, given(fs)
	return o, nil
}

// lessonsParseFlags parses flags that may come before, between or after the positional
// arguments, and returns the positional ones.
func lessonsParseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}
