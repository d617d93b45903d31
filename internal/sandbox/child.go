package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"syscall"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// childEnv is the environment variable that marks a trampoline; its value is a childConfig
// as JSON, or "probe" for Probe's trivial child.
const childEnv = "MHALAB_SANDBOX_CHILD"

// childConfig is what the trampoline needs to become the target. Limits in bytes, seconds or
// counts; fds are numbers in the trampoline (after ExtraFiles).
type childConfig struct {
	Path    string   `json:"path"`
	Args    []string `json:"args"` // argv, argv[0] included
	Env     []string `json:"env"`
	WorkDir string   `json:"workdir"`

	Memory uint64 `json:"memory"` // RLIMIT_AS, bytes (0: unchanged)
	CPU    uint64 `json:"cpu"`    // RLIMIT_CPU, seconds
	Procs  uint64 `json:"procs"`  // RLIMIT_NPROC, tasks
	Files  uint64 `json:"files"`  // RLIMIT_NOFILE
	FSize  uint64 `json:"fsize"`  // RLIMIT_FSIZE, bytes

	StatusFD     int    `json:"status_fd"`  // close-on-exec pipe: the trampoline writes why it failed
	RulesetFD    int    `json:"ruleset_fd"` // Landlock ruleset, -1 when none
	RulesetFlags uint32 `json:"ruleset_flags"`
	ProcSelf     bool   `json:"proc_self"` // add read access to /proc/<own pid> to the ruleset
}

var mainCalled bool

// Main must be called first thing in main() of a program that starts sandboxes (cmd/mhalab)
// and in TestMain of packages whose tests start them. In a sandbox's trampoline it applies the
// policy and execs the target, and never returns; in any other process it returns at once.
func Main() {
	mainCalled = true
	v, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	// Everything below runs on this one OS thread: the Landlock domain and no_new_privs are
	// per thread, and Exec must happen on the thread that has them.
	runtime.LockOSThread() // never unlocked
	if v == "probe" {
		os.Exit(0)
	}
	var c childConfig
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		fmt.Fprintf(os.Stderr, "mhalab sandbox: bad %s: %v\n", childEnv, err)
		os.Exit(125)
	}
	err := trampoline(c)
	// Only errors come back: report them on the status pipe (the parent turns them into
	// Outcome.Err) and exit.
	if c.StatusFD > 0 {
		f := os.NewFile(uintptr(c.StatusFD), "status")
		fmt.Fprint(f, err.Error())
		f.Close()
	}
	os.Exit(125)
}

// trampoline turns this process into the target; it returns only an error.
func trampoline(c childConfig) error {
	if c.StatusFD > 0 {
		unix.CloseOnExec(c.StatusFD)
	}
	if c.RulesetFD >= 0 {
		unix.CloseOnExec(c.RulesetFD)
	}
	if err := unix.Chdir(c.WorkDir); err != nil {
		return fmt.Errorf("sandbox: chdir %s: %w", c.WorkDir, err)
	}
	if c.RulesetFD >= 0 && c.ProcSelf {
		// /proc/self is this process; after Exec it is still the target's (same pid). Grant
		// reading it (maps, status, cgroup, mountinfo, its threads) and nothing else of /proc's
		// pid folders (/proc/<pid> of other processes, including the grader's, stays closed).
		fd, err := unix.Open("/proc/self", unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
		if err != nil {
			return fmt.Errorf("sandbox: open /proc/self: %w", err)
		}
		attr := llsyscall.PathBeneathAttr{
			AllowedAccess: llsyscall.AccessFSReadFile | llsyscall.AccessFSReadDir,
			ParentFd:      fd,
		}
		err = llsyscall.LandlockAddPathBeneathRule(c.RulesetFD, &attr, 0)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("sandbox: landlock rule for /proc/self: %w", err)
		}
	}
	limits := []struct {
		res  int
		val  uint64
		name string
	}{
		{unix.RLIMIT_CORE, 0, "core"},
		{unix.RLIMIT_FSIZE, c.FSize, "file size"},
		{unix.RLIMIT_NOFILE, c.Files, "open files"},
		{unix.RLIMIT_CPU, c.CPU, "CPU"},
		{unix.RLIMIT_NPROC, c.Procs, "tasks"},
		{unix.RLIMIT_AS, c.Memory, "memory"},
	}
	for _, l := range limits {
		if l.val == 0 && l.res != unix.RLIMIT_CORE {
			continue // test knob: limit off
		}
		// soft = hard, but for the CPU: Go ignores SIGXCPU (sent at the soft limit), so the CPU
		// limit is the kernel's SIGKILL at the hard one, a second later — by then the program
		// has used clearly more than the limit, which is how Wait recognises it. Lowering a
		// hard limit needs no privilege.
		rl := unix.Rlimit{Cur: l.val, Max: l.val}
		if l.res == unix.RLIMIT_CPU {
			rl.Max = l.val + 1
		}
		if err := unix.Setrlimit(l.res, &rl); err != nil {
			return fmt.Errorf("sandbox: setrlimit %s %d: %w", l.name, l.val, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if c.RulesetFD >= 0 {
		if err := llsyscall.LandlockRestrictSelf(c.RulesetFD, c.RulesetFlags); err != nil {
			return fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
		}
		unix.Close(c.RulesetFD)
	}
	err := syscall.Exec(c.Path, c.Args, c.Env)
	return fmt.Errorf("sandbox: exec %s: %w", c.Path, err)
}
