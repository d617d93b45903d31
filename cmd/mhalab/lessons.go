package main

// mhalab lessons: the classroom exercises of lessons/ (catalogue in package lessons).
//
//	mhalab lessons [list]          progress (✓/✗) and the next exercise
//	mhalab lessons check [N]       grade exercise N (default: the next one)
//	mhalab lessons hint N          the guiding questions of exercise N
//	mhalab lessons watch           re-check the current exercise whenever a file of it is saved
//	mhalab lessons reset N         restore the stub of exercise N (asks first)
//	mhalab lessons verify          maintainers: every stub fails, every solution passes
//	mhalab lessons grade DIR...    teachers: grade copies of lessons/, markdown table + CSV
//
// Grading runs `go test` on the exercise's package in a child process (its own process group,
// killed at the time limit), after restoring the graders from the originals (lessons.Original).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mhalab/mhalab/lessons"
)

// lessonsStdin is where reset reads its confirmation (tests replace it).
var lessonsStdin io.Reader = os.Stdin

// lessonsEnv is what every lessons subcommand needs.
type lessonsEnv struct {
	root      string        // repository root (the folder with go.mod and lessons/)
	backend   string        // "go" or "xla:cpu": the exercises' backend
	timeout   time.Duration // limit on running a student's code, per exercise
	compile   time.Duration // extra time allowed for compiling before the whole run is killed
	stdout    io.Writer
	stderr    io.Writer
	verbosity int
}

const lessonsUsage = `usage: mhalab lessons <subcommand> [flags]

  list                 progress (✓ done, ✗ not yet) and the next exercise (the default)
  check [N]            grade exercise N (default: the next one not done)
  hint N               the guiding questions of exercise N
  watch                check the current exercise again whenever one of its files is saved;
                       moves on when it passes; Ctrl-C stops
  reset N [-y]         put back the stub of exercise N (your changes are lost; asks first)
  verify               for maintainers (CI): every stub fails and every solution passes
  grade [-o FILE] DIR...
                       for teachers: each DIR is a student's copy of lessons/; prints a
                       markdown table and writes a CSV (default grades.csv)

flags (any subcommand):
  --backend B          go (default: nothing to install) or xla:cpu
  --timeout D          time limit for running the code of one exercise (default 60s)
  --root DIR           the mhalab repository (default: found from the current folder)

Progress is kept in lessons/.mhalab-progress.json: delete it to start over.
`

// runLessons dispatches the lessons subcommands.
func runLessons(args []string, stdout, stderr io.Writer) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	if sub == "help" {
		fmt.Fprint(stdout, lessonsUsage)
		return nil
	}
	fs := newFlagSet("lessons " + sub)
	env := &lessonsEnv{stdout: stdout, stderr: stderr}
	var root, output, only string
	var yes bool
	var interval time.Duration
	fs.StringVar(&root, "root", "", "the mhalab repository (default: found from the current folder)")
	fs.StringVar(&env.backend, "backend", "go", "backend of the exercises: go or xla:cpu")
	fs.DurationVar(&env.timeout, "timeout", 60*time.Second, "time limit for running the code of one exercise")
	fs.DurationVar(&env.compile, "compile-timeout", 5*time.Minute, "time allowed for compiling, on top of --timeout")
	switch sub {
	case "reset":
		fs.BoolVar(&yes, "y", false, "do not ask for confirmation")
		fs.BoolVar(&yes, "yes", false, "do not ask for confirmation")
	case "grade":
		fs.StringVar(&output, "o", "grades.csv", "CSV file to write")
		fs.StringVar(&only, "exercises", "", "comma-separated exercise numbers to grade (default: all)")
	case "watch":
		fs.DurationVar(&interval, "interval", 500*time.Millisecond, "how often to look for saved files")
	}
	pos, err := lessonsParseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, lessonsUsage)
		return err
	}
	if err != nil {
		return &usageError{err.Error()}
	}
	if env.backend != "go" && env.backend != "xla:cpu" {
		return &usageError{fmt.Sprintf("--backend %q: the exercises run on go or xla:cpu", env.backend)}
	}
	if env.timeout <= 0 || env.compile <= 0 {
		return &usageError{"--timeout and --compile-timeout must be positive"}
	}
	if env.root, err = lessonsFindRoot(root); err != nil {
		return err
	}
	wantArgs := func(min, max int) error {
		if len(pos) < min || len(pos) > max {
			return &usageError{fmt.Sprintf("lessons %s: wrong number of arguments %q", sub, pos)}
		}
		return nil
	}
	switch sub {
	case "list":
		if err := wantArgs(0, 0); err != nil {
			return err
		}
		return env.list()
	case "check":
		if err := wantArgs(0, 1); err != nil {
			return err
		}
		var e lessons.Exercise
		if len(pos) == 0 {
			next, ok := env.next()
			if !ok {
				fmt.Fprintln(stdout, "Every exercise is done. `mhalab lessons check N` checks one again.")
				return nil
			}
			e = next
		} else if e, err = lessonsExerciseArg(pos[0]); err != nil {
			return err
		}
		ctx, stop := lessonsSignalContext()
		defer stop()
		if res := env.check(ctx, e); !res.passed() {
			return fmt.Errorf("exercise %d is not done yet: %s", e.Number, res.status)
		}
		return nil
	case "hint":
		if err := wantArgs(1, 1); err != nil {
			return err
		}
		e, err := lessonsExerciseArg(pos[0])
		if err != nil {
			return err
		}
		return env.hint(e)
	case "watch":
		if err := wantArgs(0, 0); err != nil {
			return err
		}
		if interval <= 0 {
			return &usageError{"--interval must be positive"}
		}
		ctx, stop := lessonsSignalContext()
		defer stop()
		return env.watch(ctx, interval)
	case "reset":
		if err := wantArgs(1, 1); err != nil {
			return err
		}
		e, err := lessonsExerciseArg(pos[0])
		if err != nil {
			return err
		}
		return env.reset(e, yes, lessonsStdin)
	case "verify":
		if err := wantArgs(0, 0); err != nil {
			return err
		}
		ctx, stop := lessonsSignalContext()
		defer stop()
		return env.verify(ctx)
	case "grade":
		if len(pos) == 0 {
			return &usageError{"lessons grade: give at least one student folder (a copy of lessons/)"}
		}
		exercises := lessons.Exercises
		if only != "" {
			exercises = nil
			for _, s := range strings.Split(only, ",") {
				e, err := lessonsExerciseArg(strings.TrimSpace(s))
				if err != nil {
					return err
				}
				exercises = append(exercises, e)
			}
		}
		ctx, stop := lessonsSignalContext()
		defer stop()
		return env.grade(ctx, pos, exercises, output)
	}
	return &usageError{fmt.Sprintf("unknown lessons subcommand %q (list, check, hint, watch, reset, verify, grade)", sub)}
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

// lessonsExerciseArg parses an exercise number (or folder name such as 03_heads).
func lessonsExerciseArg(s string) (lessons.Exercise, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if e, ok := lessons.Lookup(n); ok {
			return e, nil
		}
	}
	for _, e := range lessons.Exercises {
		if e.Dir == strings.TrimSuffix(filepath.Base(s), "/") {
			return e, nil
		}
	}
	return lessons.Exercise{}, &usageError{fmt.Sprintf("no exercise %q: give a number from 1 to %d", s, len(lessons.Exercises))}
}

// lessonsFindRoot returns dir (when given) or the first folder from the working directory upwards
// that holds mhalab's go.mod and a lessons folder.
func lessonsFindRoot(dir string) (string, error) {
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

// lessonsPath is root/lessons/name.
func (env *lessonsEnv) lessonsPath(name string) string {
	return filepath.Join(env.root, "lessons", filepath.FromSlash(name))
}

// --- originals --------------------------------------------------------------------------------

// original returns the pristine content of lessons/<name>: the copy embedded in this binary when
// it is genuine, else the git object the manifest names (a binary built from an edited tree
// embeds the edit, but git still has the original).
func (env *lessonsEnv) original(name string) ([]byte, error) {
	data, genuine, err := lessons.Original(name)
	if err != nil {
		return nil, err
	}
	if genuine {
		return data, nil
	}
	hash := lessons.Manifest[name]
	out, err := exec.Command("git", "-C", env.root, "cat-file", "blob", hash).Output()
	if err == nil && lessons.GitBlobHash(out) == hash {
		return out, nil
	}
	return nil, fmt.Errorf("the original of lessons/%s is not in this mhalab binary (it was built from an edited copy) nor in git: restore it with `git checkout -- lessons/%s` or rebuild mhalab from a clean checkout", name, name)
}

// restore writes the original of each file over the copy in lessons/ when they differ, and
// returns one note per file it restored.
func (env *lessonsEnv) restore(names []string) ([]string, error) {
	var notes []string
	for _, name := range names {
		want, err := env.original(name)
		if err != nil {
			return notes, err
		}
		path := env.lessonsPath(name)
		got, err := os.ReadFile(path)
		switch {
		case err == nil && bytes.Equal(got, want):
			continue
		case errors.Is(err, os.ErrNotExist):
			notes = append(notes, fmt.Sprintf("lessons/%s was missing: restored it from the original.", name))
		default:
			notes = append(notes, fmt.Sprintf("lessons/%s was changed: restored it from the original (graders and given files cannot be edited to pass).", name))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return notes, err
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			return notes, fmt.Errorf("restoring lessons/%s: %w", name, err)
		}
	}
	return notes, nil
}

// lessonsProtectedFiles lists what grading restores: the shared files and each exercise's grader
// and given files.
func lessonsProtectedFiles(exercises []lessons.Exercise) []string {
	names := lessons.Shared()
	for _, e := range exercises {
		names = append(names, e.Protected()...)
	}
	return names
}

// --- progress ---------------------------------------------------------------------------------

// lessonsProgressFile is the state a student can delete to start over.
const lessonsProgressFile = ".mhalab-progress.json"

type lessonsProgress struct {
	Version   int                             `json:"version"`
	Exercises map[string]lessonsProgressEntry `json:"exercises"`
}

type lessonsProgressEntry struct {
	Passed bool      `json:"passed"`
	Checks string    `json:"checks,omitempty"` // "4/6"
	Status string    `json:"status"`           // "pass", "fail", "does not compile", ...
	At     time.Time `json:"at"`
}

func (env *lessonsEnv) progressPath() string { return env.lessonsPath(lessonsProgressFile) }

// loadProgress reads the state file; a missing or unreadable one is a fresh start.
func (env *lessonsEnv) loadProgress() lessonsProgress {
	p := lessonsProgress{Version: 1, Exercises: map[string]lessonsProgressEntry{}}
	data, err := os.ReadFile(env.progressPath())
	if err != nil {
		return p
	}
	if err := json.Unmarshal(data, &p); err != nil || p.Exercises == nil {
		fmt.Fprintf(env.stderr, "mhalab lessons: %s is unreadable (%v): starting from an empty progress\n", env.progressPath(), err)
		return lessonsProgress{Version: 1, Exercises: map[string]lessonsProgressEntry{}}
	}
	return p
}

// record stores the result of one exercise in the state file.
func (env *lessonsEnv) record(e lessons.Exercise, res *lessonsResult) {
	p := env.loadProgress()
	p.Exercises[e.Dir] = lessonsProgressEntry{Passed: res.passed(), Checks: res.checksSummary(), Status: res.status, At: time.Now().UTC().Truncate(time.Second)}
	data, _ := json.MarshalIndent(p, "", "  ")
	tmp := env.progressPath() + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err == nil {
		err = os.Rename(tmp, env.progressPath())
		if err == nil {
			return
		}
	}
	fmt.Fprintf(env.stderr, "mhalab lessons: could not save the progress in %s\n", env.progressPath())
}

// next is the first exercise not done, or false when all are.
func (env *lessonsEnv) next() (lessons.Exercise, bool) {
	p := env.loadProgress()
	for _, e := range lessons.Exercises {
		if !p.Exercises[e.Dir].Passed {
			return e, true
		}
	}
	return lessons.Exercise{}, false
}

// --- list, hint, reset ------------------------------------------------------------------------

func (env *lessonsEnv) list() error {
	p := env.loadProgress()
	done := 0
	for _, e := range lessons.Exercises {
		if p.Exercises[e.Dir].Passed {
			done++
		}
	}
	next, hasNext := env.next()
	fmt.Fprintf(env.stdout, "mhalab lessons: %d of %d exercises done\n\n", done, len(lessons.Exercises))
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	for _, e := range lessons.Exercises {
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
	fmt.Fprintf(env.stdout, "Progress is kept in lessons/%s: delete it to start over.\n", lessonsProgressFile)
	return nil
}

func (env *lessonsEnv) hint(e lessons.Exercise) error {
	data, err := os.ReadFile(env.lessonsPath(e.Path("hint.md")))
	if err != nil {
		if data, err = env.original(e.Path("hint.md")); err != nil {
			return err
		}
	}
	fmt.Fprintf(env.stdout, "%s\n", bytes.TrimSpace(data))
	fmt.Fprintf(env.stdout, "\nThe goal, formula and shapes: lessons/%s; the story: %s\n", e.Path("README.md"), e.Notebook)
	return nil
}

func (env *lessonsEnv) reset(e lessons.Exercise, yes bool, in io.Reader) error {
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
	if err := os.WriteFile(env.lessonsPath(stub), data, 0o644); err != nil {
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
