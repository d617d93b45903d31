// Package lessonrun is the lesson runner behind `mhalab lessons`: it grades the exercises of
// lessons/ (catalogue in package lessons) for a student (list, check, hint, watch, reset,
// solution), for maintainers (verify: every stub fails, every reference solution passes) and for
// teachers (grade: many students' copies, a report and a CSV, or Gradescope's results.json for
// one; gradescope: the autograder zip for Gradescope).
//
// Grading an exercise compiles its grader twice (gotest.go): a judge, with the original stub, which
// decides every check, and a worker, with the student's files, which runs in the sandbox of
// internal/sandbox (worker.go) and only computes the outputs the judge asks for
// (lessons/internal/grader/remote.go). Before that, the graders are restored from the originals
// (lessons.Original) and graded files that use what the exercise asks the student to write
// (lessons.Exercise.Forbidden), cgo or //go:linkname are refused. The reference solutions are not
// in the students' folders: they are embedded in the binary from lessons/solutions (package
// solutions).
package lessonrun

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mhalab/mhalab/lessons"
)

// Options are the settings of every subcommand; the zero value of a field means its default.
type Options struct {
	Root           string        // the mhalab repository ("" = found from the working directory)
	Backend        string        // "go" (default) or "xla:cpu": the exercises' backend
	Timeout        time.Duration // limit on running the code of one exercise (default 60 s)
	CompileTimeout time.Duration // time allowed for compiling, on top of Timeout (default 5 min)
	Stdout, Stderr io.Writer     // nil: discarded (the command passes its own)
	Stdin          io.Reader     // reset's confirmation (nil: empty)

	Yes        bool          // reset: do not ask
	Output     string        // grade: the CSV file (default grades.csv)
	Exercises  string        // grade, gradescope: comma-separated exercise numbers ("" = all)
	Gradescope string        // grade: also write this submission's results.json for Gradescope
	Scoring    string        // grade --gradescope, gradescope: ScoringExercise (default) or ScoringChecks
	Interval   time.Duration // watch: how often to look for saved files (default 500 ms)
	Seed       string        // the seed of the checks' random inputs ("" = a fresh one each run)
	NoSandbox  bool          // run the students' programs without the sandbox (grade refuses several students without one)
	Memory     int64         // memory limit of a student's program, bytes (0 = the sandbox's default)
}

// UsageError is a command-line mistake (a wrong number of arguments, an unknown exercise): the
// command prints its usage and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return &UsageError{fmt.Sprintf(format, args...)} }

// Subcommands lists what Run accepts, for help texts.
const Subcommands = "list, check, hint, watch, reset, solution, verify, grade, gradescope"

// runner is what every subcommand needs.
type runner struct {
	root    string        // repository root (the folder with go.mod and lessons/)
	backend string        // "go" or "xla:cpu": the exercises' backend
	timeout time.Duration // limit on running a student's code, per exercise
	compile time.Duration // extra time allowed for compiling before the whole run is killed
	stdout  io.Writer
	stderr  io.Writer
	stdin   io.Reader
	seed    string // MHALAB_GRADER_SEED for the judges ("" = each judge draws its own)

	judges    *judgeSet // grade: the judges built once for the class
	noSandbox bool      // run the workers without the sandbox (--no-sandbox)
	memory    int64     // the workers' memory limit, bytes (0 = sandbox.DefaultMemory)
}

// Run runs the subcommand sub ("" = list) with its positional arguments. ctx ends a check,
// watch, verify or grade early (Ctrl-C). Errors are one line; a *UsageError is a mistake on the
// command line.
func Run(ctx context.Context, sub string, args []string, o Options) error {
	if sub == "" {
		sub = "list"
	}
	env := &runner{backend: o.Backend, timeout: o.Timeout, compile: o.CompileTimeout, stdout: o.Stdout, stderr: o.Stderr, stdin: o.Stdin, seed: o.Seed, noSandbox: o.NoSandbox, memory: o.Memory}
	if env.backend == "" {
		env.backend = "go"
	}
	if env.timeout == 0 {
		env.timeout = 60 * time.Second
	}
	if env.compile == 0 {
		env.compile = 5 * time.Minute
	}
	if env.stdout == nil {
		env.stdout = io.Discard
	}
	if env.stderr == nil {
		env.stderr = io.Discard
	}
	if env.stdin == nil {
		env.stdin = strings.NewReader("")
	}
	if env.seed == "" {
		// One seed for the whole run, drawn here and printed: --seed repeats it.
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			return err
		}
		env.seed = strconv.FormatUint(binary.LittleEndian.Uint64(b[:])>>1, 10)
	}
	if env.backend != "go" && env.backend != "xla:cpu" {
		return usagef("--backend %q: the exercises run on go or xla:cpu", env.backend)
	}
	if env.timeout < 0 || env.compile < 0 || o.Interval < 0 {
		return usagef("--timeout, --compile-timeout and --interval must be positive")
	}
	wantArgs := func(min, max int) error {
		if len(args) < min || len(args) > max {
			return usagef("lessons %s: wrong number of arguments %q", sub, args)
		}
		return nil
	}
	// Arguments first, the repository second: a mistake on the command line is reported as
	// one, wherever mhalab runs.
	var e lessons.Exercise
	var err error
	switch sub {
	case "list", "watch", "verify":
		err = wantArgs(0, 0)
	case "check":
		if err = wantArgs(0, 1); err == nil && len(args) == 1 {
			e, err = exerciseArg(args[0])
		}
	case "hint", "reset", "solution":
		if err = wantArgs(1, 1); err == nil {
			e, err = exerciseArg(args[0])
		}
	case "grade":
		switch {
		case len(args) == 0:
			err = usagef("lessons grade: give at least one student folder (a copy of lessons/)")
		case o.Gradescope != "" && len(args) != 1:
			err = usagef("lessons grade: --gradescope grades one submission: give exactly one folder (got %d)", len(args))
		default:
			err = checkScoring(o.Scoring)
		}
	case "gradescope":
		if err = wantArgs(0, 0); err == nil {
			err = checkScoring(o.Scoring)
		}
	default:
		err = usagef("unknown lessons subcommand %q (%s)", sub, Subcommands)
	}
	if err != nil {
		return err
	}
	if env.root, err = FindRoot(o.Root); err != nil {
		return err
	}
	switch sub {
	case "list":
		return env.list()
	case "check":
		if len(args) == 0 {
			next, ok := env.next()
			if !ok {
				fmt.Fprintln(env.stdout, "Every exercise is done. `mhalab lessons check N` checks one again.")
				return nil
			}
			e = next
		}
		if res := env.check(ctx, e); !res.passed() {
			return fmt.Errorf("exercise %d is not done yet: %s", e.Number, res.status)
		}
		return nil
	case "hint":
		return env.hint(e)
	case "solution":
		return env.solution(e)
	case "watch":
		interval := o.Interval
		if interval == 0 {
			interval = 500 * time.Millisecond
		}
		return env.watch(ctx, interval)
	case "reset":
		return env.reset(e, o.Yes, env.stdin)
	case "verify":
		return env.verify(ctx)
	default: // grade, gradescope
		exercises := lessons.Exercises()
		if o.Exercises != "" {
			exercises = nil
			for _, s := range strings.Split(o.Exercises, ",") {
				e, err := exerciseArg(strings.TrimSpace(s))
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(exercises, func(x lessons.Exercise) bool { return x.Dir == e.Dir }) {
					exercises = append(exercises, e)
				}
			}
		}
		output := o.Output
		if sub == "gradescope" {
			if output == "" {
				output = "autograder.zip"
			}
			return env.gradescopeZip(ctx, exercises, o.Scoring, output)
		}
		if output == "" {
			output = "grades.csv"
		}
		return env.grade(ctx, args, exercises, output, gradescopeOutput{path: o.Gradescope, scoring: o.Scoring})
	}
}

// exerciseArg parses an exercise number (or folder name such as 03_heads).
func exerciseArg(s string) (lessons.Exercise, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if e, ok := lessons.Lookup(n); ok {
			return e, nil
		}
	}
	for _, e := range lessons.Exercises() {
		if e.Dir == strings.TrimSuffix(filepath.Base(s), "/") {
			return e, nil
		}
	}
	return lessons.Exercise{}, usagef("no exercise %q: give a number from 1 to %d", s, len(lessons.Exercises()))
}

// FindRoot returns dir (when given) or the first folder from the working directory upwards
// that holds mhalab's go.mod and a lessons folder.
func FindRoot(dir string) (string, error) {
	isRoot := func(d string) bool {
		mod, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err != nil || !bytes.Contains(mod, []byte("module github.com/mhalab/mhalab\n")) {
			return false
		}
		st, err := os.Stat(filepath.Join(d, "lessons"))
		return err == nil && st.IsDir()
	}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		if !isRoot(abs) {
			return "", fmt.Errorf("--root %s: not the mhalab repository (no go.mod of github.com/mhalab/mhalab with a lessons folder)", dir)
		}
		return abs, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isRoot(d) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("run mhalab lessons inside the mhalab repository (or give --root): no go.mod of github.com/mhalab/mhalab above %s", wd)
		}
	}
}

// inLessons is root/lessons/name.
func (env *runner) inLessons(name string) string {
	return filepath.Join(env.root, "lessons", filepath.FromSlash(name))
}
