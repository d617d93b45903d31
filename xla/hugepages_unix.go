//go:build unix

package xla

import (
	"os"
	"syscall"
)

// execSelf replaces the running program by a new start of its own binary with the environment
// env (execve of /proc/self/exe, which names the binary even if its file was replaced).
func execSelf(env []string) error {
	return syscall.Exec("/proc/self/exe", os.Args, env)
}
