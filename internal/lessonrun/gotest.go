package lessonrun

// Running the graders: `go test -json` on exercise packages in a child process, and turning its
// events into results a student can read.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/mhalab/mhalab/lessons"
)

// goTestRun describes one `go test` invocation.
type goTestRun struct {
	exercises []lessons.Exercise
	tags      []string          // build tags, e.g. "solution"
	overlay   map[string]string // go build -overlay: absolute path → replacement ("" = deleted)
}

// checkResult is one check of a grader (a subtest of TestLesson).
type checkResult struct {
	name   string   // "output shape"
	passed bool     // it ran and passed
	lines  []string // its messages, without file:line prefixes and without the hint line
	indent int      // indentation of the continuation lines of the current message
}

// result is the outcome of grading one exercise.
type result struct {
	exercise lessons.Exercise
	status   string // "pass", "fail", "does not compile", "refused", "time limit", "crashed", "missing", "error"
	reason   string // one line for tables: why it failed
	checks   []*checkResult
	build    []string // compiler messages
	output   []string // package output outside the checks (crash dumps, …)
	notes    []string // restored or ignored files
	refused  []string // uses of what the exercise forbids (checkImports), when status is "refused"
	elapsed  time.Duration
	ended    bool // go test reported the package's end
}

func (r *result) passed() bool { return r.status == "pass" }

// checksSummary is "passed/total" for the checks that ran, or "".
func (r *result) checksSummary() string {
	if len(r.checks) == 0 {
		return ""
	}
	n := 0
	for _, c := range r.checks {
		if c.passed {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(r.checks))
}

// testEvent is one line of `go test -json` (cmd/test2json), with the build events of Go ≥ 1.24.
type testEvent struct {
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Output      string
	Elapsed     float64
	FailedBuild string
}

// goBinary is the go command on PATH (running it reports a missing toolchain).
func goBinary() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// runGoTest runs the graders of run.exercises and returns one result per exercise, in order.
// The child process gets env.timeout for running the tests (go test -timeout) and, with
// compiling, env.timeout + env.compile in all; past that its whole process group is killed.
func (env *runner) runGoTest(ctx context.Context, run goTestRun) []*result {
	results := make([]*result, len(run.exercises))
	byDir := map[string]*result{}
	// -trimpath: the compiled packages do not depend on where the repository is, so copies of
	// it (a teacher's, a test's) share the build cache.
	args := []string{"test", "-json", "-count=1", "-trimpath", "-timeout", env.timeout.String()}
	// The graders are built only with the tag "lessons" (or "solution"), so that a plain
	// `go test ./...` of the repository does not grade the unsolved stubs.
	tags := append([]string{"lessons"}, run.tags...)
	if strings.HasPrefix(env.backend, "xla:") {
		tags = append(tags, "lessons_xla")
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	for i, e := range run.exercises {
		results[i] = &result{exercise: e}
		byDir[e.Dir] = results[i]
	}
	fail := func(status, reason string) []*result {
		for _, r := range results {
			r.status, r.reason = status, reason
		}
		return results
	}
	if len(run.overlay) > 0 {
		f, err := os.CreateTemp("", "mhalab-overlay-*.json")
		if err != nil {
			return fail("error", err.Error())
		}
		defer os.Remove(f.Name())
		if err := json.NewEncoder(f).Encode(map[string]any{"Replace": run.overlay}); err != nil {
			f.Close()
			return fail("error", err.Error())
		}
		f.Close()
		args = append(args, "-overlay", f.Name())
	}
	for _, e := range run.exercises {
		args = append(args, "./lessons/"+e.Dir)
	}

	limit := env.timeout + env.compile
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(runCtx, goBinary(), args...)
	cmd.Dir = env.root
	cmd.Env = append(os.Environ(), "MHALAB_LESSONS_BACKEND="+env.backend, "GOMLX_NO_AUTO_INSTALL=1")
	processGroup(cmd) // so that the kill reaches the test binaries too
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)

	parseEvents(stdout.Bytes(), byDir)
	killed := runCtx.Err() != nil
	for _, r := range results {
		if r.elapsed == 0 {
			r.elapsed = elapsed
		}
		switch {
		case r.ended:
			r.classify(env.timeout)
		case ctx.Err() != nil:
			r.status, r.reason = "stopped", "stopped before it finished"
		case killed:
			r.status = "time limit"
			r.reason = fmt.Sprintf("stopped after %s (compiling and running): is there an infinite loop?", limit.Round(time.Second))
		default:
			r.status = "error"
			r.reason = strings.TrimSpace(firstLines(stderr.String(), 3))
			if r.reason == "" && err != nil {
				r.reason = err.Error()
			}
			if r.reason == "" {
				r.reason = "go test reported nothing for this exercise"
			}
		}
	}
	var execErr *exec.Error
	if errors.As(err, &execErr) {
		return fail("error", fmt.Sprintf("cannot run go (%v): the lessons need the Go toolchain", execErr))
	}
	return results
}

var (
	fileLine = regexp.MustCompile(`^\s*[\w.\-]+\.go:\d+: `)
	hintLine = regexp.MustCompile("^Stuck\\? Run `mhalab lessons hint")
)

// parseEvents fills the results (by exercise folder) from go test's JSON events.
func parseEvents(out []byte, byDir map[string]*result) {
	checks := map[string]*checkResult{} // "dir\x00TestLesson/name"
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		pkg := ev.Package
		if pkg == "" {
			pkg, _, _ = strings.Cut(ev.ImportPath, " ")
		}
		r := byDir[path.Base(pkg)]
		if r == nil {
			continue
		}
		switch {
		case ev.Action == "build-output":
			if line := strings.TrimRight(ev.Output, "\n"); line != "" && !strings.HasPrefix(line, "# ") {
				r.build = append(r.build, line)
			}
		case ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
			r.ended = true
			r.status = ev.Action
			if ev.FailedBuild != "" {
				r.status = "does not compile"
			}
			if ev.Elapsed > 0 {
				r.elapsed = time.Duration(ev.Elapsed * float64(time.Second))
			}
		case ev.Test == "" && ev.Action == "output":
			r.output = append(r.output, strings.TrimRight(ev.Output, "\n"))
		case strings.HasPrefix(ev.Test, "TestLesson/"):
			key := r.exercise.Dir + "\x00" + ev.Test
			c := checks[key]
			if c == nil {
				c = &checkResult{name: strings.ReplaceAll(strings.TrimPrefix(ev.Test, "TestLesson/"), "_", " ")}
				checks[key] = c
				r.checks = append(r.checks, c)
			}
			switch ev.Action {
			case "pass":
				c.passed = true
			case "fail":
				c.passed = false
			case "output":
				c.lines = append(c.lines, c.cleanOutput(ev.Output)...)
			}
		case ev.Test != "" && ev.Action == "output":
			// TestLesson itself, or a test the grader does not have: keep what it says.
			r.output = append(r.output, strings.TrimRight(ev.Output, "\n"))
		}
	}
}

// cleanOutput turns one output event of a check into message lines: no === RUN / --- FAIL
// lines, no "file.go:12: " prefixes, no hint line (the report says it once). go test indents
// a message's continuation lines 4 columns deeper than the message: c.indent remembers where.
func (c *checkResult) cleanOutput(s string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "", strings.HasPrefix(trimmed, "=== "), strings.HasPrefix(trimmed, "--- "):
			continue
		case fileLine.MatchString(line):
			c.indent = len(line) - len(strings.TrimLeft(line, " \t")) + 4
			msg := fileLine.ReplaceAllString(line, "")
			if hintLine.MatchString(msg) {
				continue
			}
			out = append(out, msg)
		default:
			cut := min(c.indent, len(line)-len(strings.TrimLeft(line, " ")))
			out = append(out, line[cut:])
		}
	}
	return out
}

// classify sets status and reason once go test reported the package's end.
func (r *result) classify(timeout time.Duration) {
	all := append(append([]string{}, r.output...), r.build...)
	for _, c := range r.checks {
		all = append(all, c.lines...)
	}
	crash := ""
	for _, line := range all {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "panic: test timed out after") {
			r.status = "time limit"
			r.reason = fmt.Sprintf("ran longer than the time limit (%s) and was stopped: is there an infinite loop?", timeout)
			return
		}
		if crash == "" && (strings.HasPrefix(t, "panic: ") || strings.HasPrefix(t, "fatal error: ")) {
			crash = t
		}
	}
	switch {
	case r.status == "does not compile" || (r.status == "fail" && len(r.build) > 0 && len(r.checks) == 0):
		r.status = "does not compile"
		r.reason = firstLines(strings.Join(r.build, "\n"), 1)
	case crash != "":
		r.status = "crashed"
		r.reason = crash
	case r.status == "pass" && len(r.checks) > 0 && allPassed(r.checks):
		r.status = "pass"
	case len(r.checks) == 0:
		r.status = "fail"
		r.reason = "no check ran (did the code stop the program, e.g. with os.Exit?)"
	default:
		r.status = "fail"
		for _, c := range r.checks {
			if !c.passed {
				r.reason = fmt.Sprintf("%s checks pass; first failing: %s", r.checksSummary(), c.name)
				if len(c.lines) > 0 {
					msg := c.lines[0]
					if len([]rune(msg)) > 160 {
						msg = string([]rune(msg)[:160]) + "…"
					}
					r.reason += " (" + msg + ")"
				}
				break
			}
		}
	}
}

func allPassed(checks []*checkResult) bool {
	for _, c := range checks {
		if !c.passed {
			return false
		}
	}
	return true
}

// firstLines returns the first n non-empty lines of s.
func firstLines(s string, n int) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) != "" && len(out) < n {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, " ")
}
