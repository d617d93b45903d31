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
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mhalab/mhalab/lessons"
	"github.com/mhalab/mhalab/lessons/graderenv"
)

// goTestRun describes one grading run of a set of exercises.
type goTestRun struct {
	exercises []lessons.Exercise
	tags      []string          // build tags of the worker, e.g. "solution"
	overlay   map[string]string // the worker's go build -overlay: absolute path → replacement ("" = deleted)
	judges    *judgeSet         // judges built already (grade builds them once for the class); nil = build them
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
	status   string // "pass", "fail", "does not compile", "refused", "time limit", "memory limit", "crashed", "missing", "error"
	reason   string // one line for tables: why it failed
	checks   []*checkResult
	build    []string // compiler messages
	output   []string // package output outside the checks (crash dumps, …)
	notes    []string // restored or ignored files
	refused  []string // uses of what the exercise forbids (checkImports), when status is "refused"
	elapsed  time.Duration
	ended    bool   // the judge reported the package's end
	seed     string // the run's seed (the judge draws it; replay with MHALAB_GRADER_SEED)
	worker   string // how the student's program ended, when it ended early ("memory limit 2 GiB", …)
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

// pkgPath is the import path of an exercise's package.
func pkgPath(e lessons.Exercise) string { return "github.com/mhalab/mhalab/lessons/" + e.Dir }

// built is the outcome of compiling one exercise's grader: the test binary, or the compiler's
// messages.
type built struct {
	bin    string
	failed bool
	lines  []string
}

// judgeSet holds the judges of a set of exercises: each grader compiled with the original stub
// and files (never a student's), in their own folder.
type judgeSet struct {
	dir    string
	byDir  map[string]*built
	tmpDir string
}

// buildTests compiles the graders of exercises into out/ (go test -c), with the given tags and
// overlay; one entry per exercise folder.
func (env *runner) buildTests(ctx context.Context, exercises []lessons.Exercise, tags []string, overlay map[string]string, out, scratch string) (map[string]*built, error) {
	args := []string{"test", "-c", "-json", "-trimpath", "-o", out + string(filepath.Separator)}
	args = append(args, "-tags", strings.Join(tags, ","))
	if len(overlay) > 0 {
		f, err := os.CreateTemp(scratch, "overlay-*.json")
		if err != nil {
			return nil, err
		}
		err = json.NewEncoder(f).Encode(map[string]any{"Replace": overlay})
		f.Close()
		if err != nil {
			return nil, err
		}
		args = append(args, "-overlay", f.Name())
	}
	for _, e := range exercises {
		args = append(args, "./lessons/"+e.Dir)
	}
	bctx, cancel := context.WithTimeout(ctx, env.compile)
	defer cancel()
	cmd := exec.CommandContext(bctx, goBinary(), args...)
	cmd.Dir = env.root
	cmd.Env = append(os.Environ(), "GOMLX_NO_AUTO_INSTALL=1")
	processGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var execErr *exec.Error
	if errors.As(runErr, &execErr) {
		return nil, fmt.Errorf("cannot run go (%v): the lessons need the Go toolchain", execErr)
	}
	if bctx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("compiling took longer than %s", env.compile)
	}
	res := map[string]*built{}
	for _, e := range exercises {
		res[e.Dir] = &built{}
	}
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		pkg, _, _ := strings.Cut(ev.ImportPath, " ")
		b := res[path.Base(pkg)]
		if b == nil {
			continue
		}
		switch ev.Action {
		case "build-output":
			if line := strings.TrimRight(ev.Output, "\n"); line != "" && !strings.HasPrefix(line, "# ") {
				b.lines = append(b.lines, line)
			}
		case "build-fail":
			b.failed = true
		}
	}
	for _, e := range exercises {
		b := res[e.Dir]
		bin := filepath.Join(out, e.Dir+".test")
		if _, err := os.Stat(bin); err == nil && !b.failed {
			b.bin = bin
			continue
		}
		b.failed = true
		if len(b.lines) == 0 {
			b.lines = []string{strings.TrimSpace(firstLines(stderr.String(), 3))}
			if b.lines[0] == "" && runErr != nil {
				b.lines[0] = runErr.Error()
			}
		}
	}
	return res, nil
}

// buildJudges compiles each exercise's grader with the original stub, given files and grader
// (what this binary embeds, or git's copy): no student's file is part of a judge.
func (env *runner) buildJudges(ctx context.Context, exercises []lessons.Exercise, scratch string) (*judgeSet, error) {
	overlay := map[string]string{}
	orig := filepath.Join(scratch, "originals")
	for _, e := range exercises {
		keep := append([]string{e.File, e.Grader}, e.Given...)
		onDisk, _ := filepath.Glob(filepath.Join(env.inLessons(e.Dir), "*.go"))
		for _, f := range onDisk {
			if !slices.Contains(keep, filepath.Base(f)) {
				overlay[f] = ""
			}
		}
		for _, name := range keep {
			data, err := env.original(e.Path(name))
			if err != nil {
				return nil, err
			}
			copyPath := filepath.Join(orig, e.Dir, name)
			if err := writeFile(copyPath, data); err != nil {
				return nil, err
			}
			overlay[env.inLessons(e.Path(name))] = copyPath
		}
	}
	dir := filepath.Join(scratch, "judges")
	byDir, err := env.buildTests(ctx, exercises, []string{"lessons"}, overlay, dir, scratch)
	if err != nil {
		return nil, err
	}
	return &judgeSet{dir: dir, byDir: byDir}, nil
}

// runGoTest grades run.exercises and returns one result per exercise, in order: the judges
// (built once, or given) and the workers (the graders with the student's files) are compiled,
// then each exercise's judge runs against its worker, the worker in the sandbox. The judge gets
// env.timeout for its checks; past that (and env.compile for compiling) everything is killed.
func (env *runner) runGoTest(ctx context.Context, run goTestRun) []*result {
	results := make([]*result, len(run.exercises))
	for i, e := range run.exercises {
		results[i] = &result{exercise: e}
	}
	fail := func(status, reason string) []*result {
		for _, r := range results {
			r.status, r.reason = status, reason
		}
		return results
	}
	scratch, err := os.MkdirTemp("", "mhalab-grade-*")
	if err != nil {
		return fail("error", err.Error())
	}
	defer os.RemoveAll(scratch)
	// The sandbox's uid must be able to reach its folder inside (0711: not list what is here).
	if err := os.Chmod(scratch, 0o711); err != nil {
		return fail("error", err.Error())
	}
	judges := run.judges
	if judges == nil {
		judges = env.judges
	}
	// The judges (unless given) and the workers compile side by side.
	var judgeErr error
	var wg sync.WaitGroup
	if judges == nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			judges, judgeErr = env.buildJudges(ctx, run.exercises, scratch)
		}()
	}
	tags := append([]string{"lessons"}, run.tags...)
	if strings.HasPrefix(env.backend, "xla:") {
		tags = append(tags, "lessons_xla")
	}
	workers, err := env.buildTests(ctx, run.exercises, tags, run.overlay, filepath.Join(scratch, "workers"), scratch)
	wg.Wait()
	if judgeErr != nil {
		return fail("error", judgeErr.Error())
	}
	if err != nil {
		return fail("error", err.Error())
	}
	for i, e := range run.exercises {
		r := results[i]
		j, w := judges.byDir[e.Dir], workers[e.Dir]
		switch {
		case ctx.Err() != nil:
			r.status, r.reason = "stopped", "stopped before it finished"
		case j == nil || j.failed:
			r.status = "error"
			r.reason = "the grader itself does not compile (a problem of the teacher's copy, not of the student's code)"
			if j != nil && len(j.lines) > 0 {
				r.reason += ": " + j.lines[0]
			}
		case w.failed:
			r.status, r.build = "does not compile", w.lines
			r.reason = firstLines(strings.Join(w.lines, "\n"), 1)
		default:
			env.judge(ctx, r, j.bin, w.bin, scratch)
		}
	}
	return results
}

// judge runs one exercise: the worker (student's code) in the sandbox, the judge beside it,
// connected by two pipes; the judge's events become r's checks.
func (env *runner) judge(ctx context.Context, r *result, judgeBin, workerBin, scratch string) {
	e := r.exercise
	start := time.Now()
	// The worker's folder: its binary, the fixtures, and nothing else of the teacher's.
	box := filepath.Join(scratch, "box-"+e.Dir)
	workDir := filepath.Join(box, "lessons", e.Dir)
	if err := os.MkdirAll(filepath.Join(box, "tmp"), 0o755); err != nil {
		r.status, r.reason = "error", err.Error()
		return
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		r.status, r.reason = "error", err.Error()
		return
	}
	for _, name := range lessons.Shared() {
		if !strings.HasPrefix(name, "testdata/") {
			continue
		}
		data, err := env.original(name)
		if err == nil {
			err = writeFile(filepath.Join(box, "lessons", filepath.FromSlash(name)), data)
		}
		if err != nil {
			r.status, r.reason = "error", err.Error()
			return
		}
	}
	bin := filepath.Join(box, "worker.test")
	if err := copyFileMode(workerBin, bin, 0o755); err != nil {
		r.status, r.reason = "error", err.Error()
		return
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		r.status, r.reason = "error", err.Error()
		return
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		r.status, r.reason = "error", err.Error()
		return
	}
	limit := env.timeout + 10*time.Second
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	var workerOut capped
	wk, err := env.startWorker(runCtx, workerSpec{
		bin: bin, dir: box, workDir: workDir,
		args:  []string{"-test.run", "^TestLesson$", "-test.timeout", (env.timeout + 5*time.Second).String()},
		env:   env.workerEnv(box),
		extra: []*os.File{reqR, respW},
		out:   &workerOut,
	})
	reqR.Close()
	respW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		r.status, r.reason = "error", "cannot start the student's program: "+err.Error()
		return
	}

	// The judge, its events through go tool test2json.
	jcmd := exec.CommandContext(runCtx, judgeBin, "-test.v=test2json", "-test.run", "^TestLesson$", "-test.timeout", env.timeout.String())
	jcmd.Dir = env.inLessons(e.Dir)
	jcmd.Env = append(os.Environ(), graderenv.Role+"=judge", "GOMLX_NO_AUTO_INSTALL=1")
	if env.seed != "" {
		jcmd.Env = append(jcmd.Env, graderenv.Seed+"="+env.seed)
	}
	jcmd.ExtraFiles = []*os.File{respR, reqW}
	processGroup(jcmd)
	jcmd.WaitDelay = 5 * time.Second
	conv := exec.CommandContext(runCtx, goBinary(), "tool", "test2json", "-p", pkgPath(e))
	var events, convErr, judgeErr bytes.Buffer
	conv.Stdout, conv.Stderr = &events, &convErr
	// stdout and stderr in one stream, as go test does: a panic (the judge's own time limit)
	// is printed on stderr and becomes the check's output.
	jout, jin, err := os.Pipe()
	if err == nil {
		conv.Stdin = jout
		jcmd.Stdout, jcmd.Stderr = jin, jin
		err = jcmd.Start()
		jin.Close()
		defer jout.Close()
	}
	respR.Close()
	reqW.Close()
	if err == nil {
		err = conv.Start()
		if err != nil {
			_ = jcmd.Process.Kill()
			_ = jcmd.Wait()
		}
	}
	if err != nil {
		wk.wait()
		r.status, r.reason = "error", "cannot run the grader: "+err.Error()
		return
	}
	judgeRunErr := jcmd.Wait()
	_ = conv.Wait()
	// The judge is done: whatever the student's program still does is stopped now.
	outcome := wk.wait()
	r.elapsed = time.Since(start)

	byDir := map[string]*result{e.Dir: r}
	parseEvents(events.Bytes(), byDir)
	for _, line := range r.output {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), graderenv.SeedLine); ok {
			r.seed = s
		}
	}
	if outcome.limit != "" {
		r.worker = outcome.limit
	} else if crash := crashLine(workerOut.String()); crash != "" {
		r.worker = crash
	}
	switch {
	case r.ended:
		r.classify(env.timeout)
	case ctx.Err() == nil && runCtx.Err() == nil && (len(r.checks) > 0 || len(r.output) > 0):
		// The judge stopped without its last event (its own time limit panics): what it printed says why.
		r.classify(env.timeout)
	case ctx.Err() != nil:
		r.status, r.reason = "stopped", "stopped before it finished"
	case runCtx.Err() != nil:
		r.status = "time limit"
		r.reason = fmt.Sprintf("stopped after %s: is there an infinite loop?", limit.Round(time.Second))
	default:
		r.status = "error"
		r.reason = strings.TrimSpace(firstLines(judgeErr.String()+"\n"+convErr.String(), 3))
		if r.reason == "" && judgeRunErr != nil {
			r.reason = "the grader stopped: " + judgeRunErr.Error()
		}
		if r.reason == "" {
			r.reason = "the grader reported nothing for this exercise"
		}
	}
	// A student's program stopped at a limit or by a crash: say which, whatever the checks say.
	if r.status != "pass" && r.worker != "" && workerStopped(r) {
		switch {
		case strings.HasPrefix(r.worker, "memory limit"):
			r.status = "memory limit"
			r.reason = "used more memory than allowed and was stopped (" + r.worker + ")"
		case strings.HasPrefix(r.worker, "time limit"), strings.HasPrefix(r.worker, "CPU time limit"):
			r.status = "time limit"
			r.reason = fmt.Sprintf("ran longer than the time limit (%s) and was stopped: is there an infinite loop? (%s)", env.timeout, r.worker)
		case strings.HasPrefix(r.worker, "process limit"):
			r.status = "process limit"
			r.reason = "started too many processes or threads and was stopped (" + r.worker + ")"
		default:
			r.status = "crashed"
			r.reason = r.worker
			// The stack of the crash, for the places in the student's files.
			for _, line := range strings.Split(workerOut.String(), "\n") {
				if len(r.output) > 200 {
					break
				}
				r.output = append(r.output, line)
			}
		}
	}
}

// workerStopped reports whether a check of r failed because the student's program was gone.
func workerStopped(r *result) bool {
	for _, c := range r.checks {
		for _, line := range c.lines {
			if strings.Contains(line, "not run: the program running your code") {
				return true
			}
		}
	}
	return r.status == "time limit" || r.status == "error"
}

// crashLine is the first line of a Go panic or fatal error in the student's program's output.
func crashLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "panic: ") || strings.HasPrefix(t, "fatal error: ") {
			return shorten(t, 300)
		}
	}
	return ""
}

// workerEnv is the environment of the student's program: nothing of the teacher's but what the
// exercises need.
func (env *runner) workerEnv(box string) []string {
	out := []string{
		graderenv.Role + "=worker",
		graderenv.Backend + "=" + env.backend,
		"GOMLX_NO_AUTO_INSTALL=1",
		"HOME=" + box,
		"TMPDIR=" + filepath.Join(box, "tmp"),
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
	}
	for _, k := range []string{"MHALAB_FASTGO", "MHALAB_FASTGO_REQUIRE_SIMD", "GOMAXPROCS", "PJRT_PLUGIN_LIBRARY_PATH"} {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// capped keeps the first 256 KiB written to it: a flood of output cannot fill the grader's memory.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := 256<<10 - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

func copyFileMode(src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, mode)
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
				if seed, ok := strings.CutPrefix(strings.TrimSpace(ev.Output), graderenv.SeedLine); ok {
					r.seed = seed // printed by the judge when the first check starts
					continue
				}
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
