//go:build unix

package lessonrun

import (
	"os/exec"
	"syscall"
)

// processGroup starts cmd in its own process group and makes its cancellation kill the whole
// group: `go test` runs the compiled test binary as a child, which must die with it.
func processGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
