package lessonrun

// Starting the student's program (the worker): in the sandbox of internal/sandbox by default, or
// as a plain child process with --no-sandbox.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mhalab/mhalab/internal/sandbox"
	"github.com/mhalab/mhalab/xla"
)

// workerSpec is what the worker needs: its binary, its only writable folder, the pipes to the
// judge.
type workerSpec struct {
	bin     string
	dir     string // the only folder it may write (its HOME and TMPDIR are inside)
	workDir string // its working directory, beneath dir
	args    []string
	env     []string
	extra   []*os.File // fds 3, 4, …
	out     io.Writer  // stdout and stderr, capped by the caller
}

// workerOutcome is how the worker ended.
type workerOutcome struct {
	limit string // "" or the limit that stopped it, in words ("memory limit 4 GiB")
}

// workerProc is a started worker: sandboxed (box) or plain (cmd).
type workerProc struct {
	box *sandbox.Cmd
	cmd *exec.Cmd
}

// probeIsolation probes the sandbox (tests replace it to play a machine without one).
var probeIsolation = sandbox.Probe

// isolation is what the sandbox can enforce on this machine, probed once.
func isolation() sandbox.Isolation { return probeIsolation() }

// sandboxed reports whether the workers run in the sandbox.
func (env *runner) sandboxed() bool { return !env.noSandbox && isolation().Confined() }

// isolationLine says in one line how the students' programs are isolated, with the limits.
func (env *runner) isolationLine() string {
	if env.noSandbox {
		return "no sandbox (--no-sandbox): the students' programs run with your rights; time limit " + env.timeout.String() + " (whole process group)"
	}
	iso := isolation()
	if !iso.Confined() {
		return "no sandbox available here (" + iso.String() + "): the students' programs would run with your rights"
	}
	s := iso.String()
	if i := strings.Index(s, "; limits:"); i >= 0 {
		s = s[:i]
	}
	limits := sandbox.Policy{Memory: env.memory, CPU: env.timeout}.Limits()
	return fmt.Sprintf("sandbox: %s; limits per exercise: %s, no network, writes only in its own temporary folder", s, limits)
}

// startWorker starts the worker. wait stops whatever is left of it and returns how it ended.
func (env *runner) startWorker(ctx context.Context, spec workerSpec) (*workerProc, error) {
	if !env.sandboxed() {
		cmd := exec.CommandContext(ctx, spec.bin, spec.args...)
		cmd.Dir = spec.workDir
		cmd.Env = spec.env
		cmd.ExtraFiles = spec.extra
		cmd.Stdout, cmd.Stderr = spec.out, spec.out
		processGroup(cmd)
		cmd.WaitDelay = 2 * time.Second
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return &workerProc{cmd: cmd}, nil
	}
	p := sandbox.Policy{
		Dir:        spec.dir,
		WorkDir:    spec.workDir,
		Memory:     env.memory,
		CPU:        env.timeout,
		Env:        spec.env,
		Stdout:     spec.out,
		Stderr:     spec.out,
		ExtraFiles: spec.extra,
	}
	if strings.HasPrefix(env.backend, "xla:") {
		// The PJRT plugin, read-only; the worker finds it through PJRT_PLUGIN_LIBRARY_PATH.
		if plugin, err := xla.FindPlugin(strings.TrimPrefix(env.backend, "xla:")); err == nil {
			dir := filepath.Dir(plugin)
			p.ReadOnly = append(p.ReadOnly, dir)
			p.Env = append(withoutVar(p.Env, "PJRT_PLUGIN_LIBRARY_PATH"), "PJRT_PLUGIN_LIBRARY_PATH="+dir)
		}
	}
	box, err := sandbox.Command(ctx, p, spec.bin, spec.args...)
	if err != nil {
		return nil, err
	}
	if err := box.Start(); err != nil {
		return nil, err
	}
	return &workerProc{box: box}, nil
}

// wait stops the worker and everything it started, and says how it ended.
func (w *workerProc) wait() workerOutcome {
	if w.box != nil {
		out := make(chan sandbox.Outcome, 1)
		go func() { out <- w.box.Wait() }()
		select {
		case o := <-out:
			return workerOutcome{limit: o.Limit}
		case <-time.After(200 * time.Millisecond):
		}
		// Still running after the judge finished: it is stopped (not a limit of its own).
		w.box.Kill()
		o := <-out
		if strings.HasPrefix(o.Limit, "time limit") {
			o.Limit = ""
		}
		return workerOutcome{limit: o.Limit}
	}
	if w.cmd.Cancel != nil {
		_ = w.cmd.Cancel()
	}
	_ = w.cmd.Wait()
	return workerOutcome{}
}

func withoutVar(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
