package lessonrun

// Starting the student's program (the worker): in the sandbox of internal/sandbox.

import (
	"context"
	"io"
	"os"
	"os/exec"
	"time"
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
	limit string // "" or the limit that stopped it, in words ("memory limit 2 GiB")
}

type workerProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startWorker starts the worker. wait stops whatever is left of it and returns how it ended.
func (env *runner) startWorker(ctx context.Context, spec workerSpec) (*workerProc, error) {
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

func (w *workerProc) wait() workerOutcome {
	if w.cmd.Cancel != nil {
		_ = w.cmd.Cancel()
	}
	_ = w.cmd.Wait()
	return workerOutcome{}
}
