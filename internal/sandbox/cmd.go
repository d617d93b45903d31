package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Outcome is how a sandboxed program ended.
type Outcome struct {
	Exit      int    // exit status; -1 when killed by a signal or not started
	Signal    string // the signal that killed it ("SIGKILL"), "" when it exited
	Limit     string // "" or the limit that stopped it, in words: "memory limit 2 GiB", "CPU time limit 60 s", "time limit 30 s", "process limit 256"
	Err       error  // could not start, stopped by a cancelled context, …
	Truncated bool   // Stdout or Stderr had more than OutputCap bytes; the rest was dropped
}

// testOff switches mechanisms off for this package's tests, to see each attack test fail
// without its mechanism. Never set outside tests.
var testOff struct {
	landlock, userNS, pidNS, netNS, uid, limits bool
}

// Cmd is a program prepared to run in a sandbox. Start it (or Run it) once; always Wait.
type Cmd struct {
	ctx    context.Context
	p      Policy
	path   string   // the program as the child sees it
	args   []string // argv as the child sees it
	env    []string
	m      mode
	uid    int // the child's uid seen from outside (-1: the caller's)
	iso    Isolation
	stage  stager
	roSeen []string // ReadOnly as the child sees them (+ the program)

	cmd       *exec.Cmd
	statusR   *os.File
	outs      [2]*capture
	copies    sync.WaitGroup
	ctxKilled atomic.Bool
	started   time.Time
	startErr  error
	waited    bool
	outcome   Outcome
}

// Command prepares path (the program; absolute, or relative to the current folder) to run
// with args under policy p. ctx's end kills the sandbox (reported as a time limit when it is
// a deadline). As root it already chowns p.Dir and stages unreachable ReadOnly paths.
func Command(ctx context.Context, p Policy, path string, args ...string) (*Cmd, error) {
	if ctx == nil {
		return nil, errors.New("sandbox: nil context")
	}
	if !mainCalled {
		return nil, errors.New("sandbox: sandbox.Main was not called first thing in main (or TestMain)")
	}
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: program %q: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("sandbox: program: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("sandbox: program %s is not an executable file", abs)
	}
	c := &Cmd{ctx: ctx, p: p, iso: Probe(), uid: -1}
	c.m = c.iso.mode()
	if testOff.userNS {
		c.m.userNS = false
	}
	if testOff.pidNS {
		c.m.pidNS = false
	}
	if testOff.netNS {
		c.m.netNS = false
	}
	if testOff.uid {
		c.m.switchUID = false
	}
	if !c.m.userNS && !c.m.switchUID && os.Getuid() != 0 {
		// Without a user namespace an ordinary user cannot create the others.
		c.m.pidNS, c.m.netNS, c.m.ipcNS = false, false, false
	}
	if c.m.switchUID {
		c.uid = p.UID
		c.stage = stager{uid: p.UID, gid: p.UID}
		if err := c.prepareForUID(); err != nil {
			c.cleanup()
			return nil, err
		}
	}
	c.path, err = c.stage.add(abs)
	if err != nil {
		c.cleanup()
		return nil, err
	}
	c.roSeen = append(c.roSeen, c.path)
	for _, r := range p.ReadOnly {
		seen, err := c.stage.add(r)
		if err != nil {
			c.cleanup()
			return nil, err
		}
		c.roSeen = append(c.roSeen, seen)
	}
	c.args = append([]string{c.path}, args...)
	for i := 1; i < len(c.args); i++ {
		c.args[i] = c.stage.childPath(c.args[i])
	}
	c.env = c.childEnv()
	return c, nil
}

// prepareForUID checks that the child's uid can reach Dir and gives Dir to it.
func (c *Cmd) prepareForUID() error {
	real, err := filepath.EvalSymlinks(c.p.Dir)
	if err != nil {
		return fmt.Errorf("sandbox: Policy.Dir: %w", err)
	}
	parent := filepath.Dir(real)
	if ok, stop := canReach(parent, c.p.UID, c.p.UID, permX); !ok {
		return fmt.Errorf("sandbox: uid %d cannot reach Policy.Dir %s: folder %s is not searchable by it (make the folders above Dir mode o+x)",
			c.p.UID, c.p.Dir, stop)
	}
	if err := chownTree(c.p.Dir, c.p.UID, c.p.UID); err != nil {
		return fmt.Errorf("sandbox: giving Policy.Dir to uid %d: %w", c.p.UID, err)
	}
	return nil
}

// childEnv is Policy.Env with HOME and TMPDIR set to Dir, a default PATH, and staged paths
// rewritten.
func (c *Cmd) childEnv() []string {
	env := []string{"HOME=" + c.p.Dir, "TMPDIR=" + c.p.Dir}
	has := map[string]bool{}
	for _, kv := range c.p.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "TMPDIR" {
			continue
		}
		has[k] = true
		env = append(env, k+"="+c.stage.childPath(v))
	}
	if !has["PATH"] {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	if !has["MALLOC_ARENA_MAX"] {
		// glibc reserves an arena of 64 MiB of address space per thread (up to 8 per core):
		// under an address-space limit that, not memory, is what XLA's threads run out of.
		env = append(env, "MALLOC_ARENA_MAX=2")
	}
	return env
}

// Path is where the child sees the caller's path: a staged copy (root, a path the child's uid
// cannot reach) or path itself.
func (c *Cmd) Path(path string) string {
	return c.stage.childPath(path)
}

// Isolation is what this Cmd enforces (the machine's, less any mechanism switched off).
func (c *Cmd) Isolation() Isolation {
	i := c.iso
	i.UserNS, i.PIDNS, i.NetNS, i.IPCNS, i.SeparateUID = c.m.userNS, c.m.pidNS, c.m.netNS, c.m.ipcNS, c.m.switchUID
	if testOff.landlock {
		i.Landlock = 0
	}
	return i
}

// rules are the Landlock rules of the child: read/execute the system and the read-only paths,
// read/write Dir, a few devices; no network rule, so TCP bind and connect are denied.
func (c *Cmd) rules() []landlock.Rule {
	rs := []landlock.Rule{
		landlock.RODirs("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin").IgnoreIfMissing(),
		// /etc narrowed to what the C library, the Go runtime and TLS read.
		landlock.ROFiles("/etc/ld.so.cache", "/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/localtime", "/etc/nsswitch.conf",
			"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf", "/etc/host.conf", "/etc/gai.conf",
			"/etc/mime.types").IgnoreIfMissing(),
		landlock.RODirs("/etc/ld.so.conf.d", "/etc/ssl", "/etc/pki", "/etc/ca-certificates").IgnoreIfMissing(),
		// What the Go runtime and XLA read about the machine (CPUs, memory, huge pages).
		landlock.ROFiles("/proc/cpuinfo", "/proc/meminfo", "/proc/stat").IgnoreIfMissing(),
		landlock.RODirs("/sys/devices/system/cpu", "/sys/kernel/mm/transparent_hugepage").IgnoreIfMissing(),
		landlock.ROFiles("/dev/zero", "/dev/urandom", "/dev/random").IgnoreIfMissing(),
		landlock.RWFiles("/dev/null"),
		landlock.RWDirs(c.p.Dir).WithRefer(),
	}
	for _, r := range c.roSeen {
		if fi, err := os.Stat(r); err == nil && fi.IsDir() {
			rs = append(rs, landlock.RODirs(r))
		} else {
			rs = append(rs, landlock.ROFiles(r))
		}
	}
	return rs
}

// Start starts the sandbox. Call Wait afterwards in every case.
func (c *Cmd) Start() error {
	if c.cmd != nil || c.startErr != nil {
		return errors.New("sandbox: Cmd already started")
	}
	err := c.start()
	if err != nil {
		c.startErr = err
		c.cleanup()
	}
	return err
}

func (c *Cmd) start() error {
	if err := c.ctx.Err(); err != nil {
		return fmt.Errorf("sandbox: not started: %w", err)
	}
	var closeAfter []*os.File
	defer func() {
		for _, f := range closeAfter {
			f.Close()
		}
	}()
	n := 3 + len(c.p.ExtraFiles)
	cfg := childConfig{
		Path: c.path, Args: c.args, Env: c.env, WorkDir: c.p.WorkDir,
		Memory: uint64(c.p.Memory), CPU: c.p.cpuSeconds(), Procs: uint64(c.p.Procs),
		Files: uint64(c.p.Files), FSize: FileSize,
		StatusFD: n, RulesetFD: -1,
	}
	if testOff.limits {
		cfg.Memory, cfg.CPU, cfg.Procs, cfg.Files, cfg.FSize = 0, 0, 0, 0, 0
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	c.statusR = statusR
	closeAfter = append(closeAfter, statusW)
	extra := append(append([]*os.File{}, c.p.ExtraFiles...), statusW)
	if c.iso.Landlock > 0 && !testOff.landlock {
		fd, flags, err := landlock.V11.BestEffort().NewRulesetFD(c.rules()...)
		if err != nil {
			return fmt.Errorf("sandbox: landlock ruleset: %w", err)
		}
		if fd >= 0 {
			f := os.NewFile(uintptr(fd), "landlock-ruleset")
			closeAfter = append(closeAfter, f)
			extra = append(extra, f)
			cfg.RulesetFD, cfg.RulesetFlags, cfg.ProcSelf = n+1, flags, true
		}
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}

	cmd := exec.CommandContext(c.ctx, "/proc/self/exe")
	cmd.Args = []string{"mhalab-sandbox"}
	cmd.Env = []string{childEnv + "=" + string(js)}
	cmd.Stdin = c.p.Stdin
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = c.m.attr(c.p.UID)
	cmd.Cancel = func() error {
		c.ctxKilled.Store(true)
		c.killTree()
		return nil
	}
	cmd.WaitDelay = 2 * time.Second // bounds waiting for Stdin's copy
	for i, w := range []io.Writer{c.p.Stdout, c.p.Stderr} {
		r, pw, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		closeAfter = append(closeAfter, pw)
		c.outs[i] = &capture{w: w, r: r}
		if i == 0 {
			cmd.Stdout = pw
		} else {
			cmd.Stderr = pw
		}
	}
	c.cmd = cmd
	c.started = time.Now()
	if err := cmd.Start(); err != nil {
		for _, o := range c.outs {
			o.r.Close()
		}
		return fmt.Errorf("sandbox: starting %s: %w", c.path, err)
	}
	for _, o := range c.outs {
		c.copies.Add(1)
		go func() {
			defer c.copies.Done()
			o.run()
		}()
	}
	return nil
}

// killTree kills the sandbox: its PID 1 (the namespace dies with it) and its process group.
func (c *Cmd) killTree() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	pid := c.cmd.Process.Pid
	syscall.Kill(pid, syscall.SIGKILL)
	syscall.Kill(-pid, syscall.SIGKILL)
}

// Kill stops the program and its whole process tree now; Wait still reports and cleans up.
func (c *Cmd) Kill() { c.killTree() }

// Run starts the program and waits for it.
func (c *Cmd) Run() Outcome {
	if err := c.Start(); err != nil {
		return Outcome{Exit: -1, Err: err}
	}
	return c.Wait()
}

// Wait waits for the program to end, kills whatever of its process tree is left, and says how
// it ended. Later calls return the same Outcome.
func (c *Cmd) Wait() Outcome {
	if c.waited {
		return c.outcome
	}
	c.waited = true
	if c.cmd == nil {
		err := c.startErr
		if err == nil {
			err = errors.New("sandbox: Wait before Start")
		}
		c.outcome = Outcome{Exit: -1, Err: err}
		return c.outcome
	}
	waitErr := c.cmd.Wait()
	if !c.m.pidNS {
		// No namespace died with PID 1: kill the rest of the group. The group id cannot have
		// been reused while members are alive.
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
	// The output pipes close when the last holder dies; a process that escaped the group
	// (no PID namespace) could hold them: stop reading after a while.
	done := make(chan struct{})
	go func() { c.copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		for _, o := range c.outs {
			o.r.Close()
		}
		<-done
	}
	status, _ := io.ReadAll(io.LimitReader(c.statusR, 4096))
	c.statusR.Close()
	c.cleanup()
	c.outcome = c.classify(waitErr, string(status))
	return c.outcome
}

// cleanup removes the staging folder.
func (c *Cmd) cleanup() {
	if c.stage.dir != "" {
		os.RemoveAll(c.stage.dir)
		c.stage.dir = ""
	}
}

// classify turns the process state, the trampoline's status and the captured stderr into an
// Outcome.
func (c *Cmd) classify(waitErr error, status string) Outcome {
	o := Outcome{Exit: -1}
	o.Truncated = c.outs[0].dropped > 0 || c.outs[1].dropped > 0
	ps := c.cmd.ProcessState
	if ps == nil {
		o.Err = fmt.Errorf("sandbox: %v", waitErr)
		return o
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		o.Signal = unix.SignalName(ws.Signal())
	} else {
		o.Exit = ws.ExitStatus()
	}
	if status != "" {
		o.Err = errors.New(status)
		return o
	}
	if c.ctxKilled.Load() {
		if dl, ok := c.ctx.Deadline(); ok && errors.Is(c.ctx.Err(), context.DeadlineExceeded) {
			o.Limit = "time limit " + secondsWords(dl.Sub(c.started).Round(100*time.Millisecond))
		} else {
			o.Err = fmt.Errorf("sandbox: stopped: %w", context.Cause(c.ctx))
		}
		return o
	}
	if o.Exit == 0 {
		return o
	}
	cpu := ps.UserTime() + ps.SystemTime()
	lim := time.Duration(c.p.cpuSeconds()) * time.Second
	switch ws.Signal() {
	case syscall.SIGXCPU:
		o.Limit = "CPU time limit " + secondsWords(lim)
		return o
	case syscall.SIGKILL:
		// Killed at the hard CPU limit (a second past the soft one). The process's own CPU time,
		// as wait reports it, was seen below the limit on a loaded machine: half of it is enough
		// to tell from a kill of another origin.
		if !testOff.limits && cpu >= lim/2 {
			o.Limit = "CPU time limit " + secondsWords(lim)
			return o
		}
	case syscall.SIGXFSZ:
		o.Limit = "file size limit " + bytesWords(FileSize)
		return o
	}
	o.Limit = c.limitFromStderr()
	return o
}

// limitFromStderr recognises the messages that running into a limit produces (Go's runtime,
// os/exec, the C library, XLA). A heuristic: a program could print them on purpose.
func (c *Cmd) limitFromStderr() string {
	text := strings.ToLower(c.outs[1].text())
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(text, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("pthread_create() failed", "pthread_create failed") && !has("errno=12"):
		// XLA/absl: EAGAIN is both "no more tasks" and "no memory for the thread's stack".
		return fmt.Sprintf("memory limit %s or process limit %d (a thread could not be created)", bytesWords(c.p.Memory), c.p.Procs)
	case has("errno=11", "ulimit -u", "resource temporarily unavailable", "fatal error: newosproc"):
		return fmt.Sprintf("process limit %d", c.p.Procs)
	case has("out of memory", "cannot allocate memory", "bad_alloc", "errno=12", "failed to reserve", "resource_exhausted"):
		return "memory limit " + bytesWords(c.p.Memory)
	case has("too many open files"):
		return fmt.Sprintf("open files limit %d", c.p.Files)
	case has("file too large"):
		return "file size limit " + bytesWords(FileSize)
	}
	return ""
}

// capture copies a child's output to w, at most OutputCap bytes, keeping the first and last
// few KiB for recognising limit messages; it drains everything so the child never blocks.
type capture struct {
	w       io.Writer
	r       *os.File
	passed  int64
	dropped int64
	head    []byte
	tail    []byte
	mu      sync.Mutex
}

const keep = 16 << 10 // bytes of head and of tail kept for classification

func (c *capture) run() {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.r.Read(buf)
		if n > 0 {
			c.take(buf[:n])
		}
		if err != nil {
			c.r.Close()
			return
		}
	}
}

func (c *capture) take(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.head) < keep {
		c.head = append(c.head, b[:min(len(b), keep-len(c.head))]...)
	}
	c.tail = append(c.tail, b...)
	if len(c.tail) > keep {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-keep:]...)
	}
	room := OutputCap - c.passed
	if room <= 0 || c.w == nil {
		if c.w != nil {
			c.dropped += int64(len(b))
		}
		return
	}
	part := b[:min(int64(len(b)), room)]
	if _, err := c.w.Write(part); err != nil {
		c.w = nil // the caller's writer failed: stop passing on, keep draining
	}
	c.passed += int64(len(part))
	c.dropped += int64(len(b) - len(part))
}

func (c *capture) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Equal(c.head, c.tail) {
		return string(c.head)
	}
	return string(c.head) + "\n" + string(c.tail)
}
