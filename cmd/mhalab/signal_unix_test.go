//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/mhalab/mhalab/internal/cli"
)

// TestCtrlCInterrupts: with signals, Ctrl-C (SIGINT) cancels an interruptible command's
// context instead of killing the process; the command's context error is one line, exit 130.
func TestCtrlCInterrupts(t *testing.T) {
	saved := commands
	t.Cleanup(func() { commands = saved })
	commands = append(commands, command{name: "wait", summary: "waits for Ctrl-C", interruptible: true,
		parse: func(command, []string, io.Writer) (runner, error) {
			return runFunc(func(ctx context.Context, _ cli.IO) error {
				if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
					return err
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Minute):
					return errors.New("no Ctrl-C in a minute")
				}
			}), nil
		}})
	var stdout, stderr bytes.Buffer
	code := runIO([]string{"wait"}, cli.IO{Out: &stdout, Err: &stderr}, true)
	if code != exitInterrupted || stderr.String() != "mhalab wait: interrupted\n" {
		t.Errorf("exit %d, stderr %q; want %d and one line", code, stderr.String(), exitInterrupted)
	}
}
