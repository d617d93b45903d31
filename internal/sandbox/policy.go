package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults of a Policy's limits.
const (
	// DefaultMemory is the address-space limit, bytes. Address space, not resident memory: the
	// XLA CPU client for a 3-element graph peaked at 2.45 GiB of it on a 2-core machine (failing
	// under 2.25 GiB) while resident at 117 MiB; with MALLOC_ARENA_MAX=2 (set by default, see
	// Policy.Env) it peaked at 1.57 GiB. 4 GiB leaves room for the program's own tensors and
	// for more cores (a thread stack and its arena each count).
	DefaultMemory = 4 << 30
	DefaultCPU    = 60 * time.Second // CPU time (user+system) of the program
	DefaultProcs  = 256              // tasks (processes + threads) in the sandbox
	DefaultFiles  = 256              // open file descriptors per process
	DefaultUID    = 65534            // uid and gid of the child when the caller is root (nobody)
	FileSize      = 256 << 20        // largest file the child may write, bytes
	OutputCap     = 256 << 10        // bytes of Stdout and of Stderr passed on; the rest is dropped
)

// Policy says what a sandboxed program may do. The zero value of a limit means its default.
type Policy struct {
	Dir      string        // the only writable folder; the working directory is Dir or WorkDir; HOME and TMPDIR are Dir
	WorkDir  string        // optional working directory beneath Dir (absolute, or relative to Dir)
	ReadOnly []string      // extra files/folders the child may read and execute (the program's folder, fixtures, the PJRT plugin)
	Memory   int64         // address-space limit, bytes (default 2 GiB)
	CPU      time.Duration // CPU-time limit (default 60 s; rounded up to whole seconds)
	Procs    int           // tasks limit (processes + threads; Go and XLA threads count), default 256
	Files    int           // open files per process (default 256)
	UID      int           // uid and gid of the child when the caller is root (default 65534); ignored otherwise
	Env      []string      // the child's environment; nothing of the parent's is inherited unless listed (defaults added: PATH, MALLOC_ARENA_MAX=2)

	Stdin          io.Reader
	Stdout, Stderr io.Writer  // each receives at most OutputCap bytes; nil discards
	ExtraFiles     []*os.File // passed as fds 3, 4, …
}

// withDefaults returns p with absolute, cleaned paths and every zero limit set, or an error
// for input that cannot be run.
func (p Policy) withDefaults() (Policy, error) {
	if p.Dir == "" {
		return p, fmt.Errorf("sandbox: Policy.Dir is empty")
	}
	dir, err := filepath.Abs(p.Dir)
	if err != nil {
		return p, fmt.Errorf("sandbox: Policy.Dir: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return p, fmt.Errorf("sandbox: Policy.Dir: %w", err)
	} else if !fi.IsDir() {
		return p, fmt.Errorf("sandbox: Policy.Dir %s is not a folder", dir)
	}
	p.Dir = dir
	if p.WorkDir == "" {
		p.WorkDir = dir
	} else {
		wd := p.WorkDir
		if !filepath.IsAbs(wd) {
			wd = filepath.Join(dir, wd)
		}
		wd = filepath.Clean(wd)
		if !within(wd, dir) {
			return p, fmt.Errorf("sandbox: Policy.WorkDir %s is not beneath Dir %s", wd, dir)
		}
		if fi, err := os.Stat(wd); err != nil {
			return p, fmt.Errorf("sandbox: Policy.WorkDir: %w", err)
		} else if !fi.IsDir() {
			return p, fmt.Errorf("sandbox: Policy.WorkDir %s is not a folder", wd)
		}
		p.WorkDir = wd
	}
	ro := make([]string, 0, len(p.ReadOnly))
	for _, r := range p.ReadOnly {
		a, err := filepath.Abs(r)
		if err != nil {
			return p, fmt.Errorf("sandbox: Policy.ReadOnly %q: %w", r, err)
		}
		if _, err := os.Stat(a); err != nil {
			return p, fmt.Errorf("sandbox: Policy.ReadOnly: %w", err)
		}
		ro = append(ro, a)
	}
	p.ReadOnly = ro
	switch {
	case p.Memory < 0 || p.CPU < 0 || p.Procs < 0 || p.Files < 0 || p.UID < 0:
		return p, fmt.Errorf("sandbox: negative limit in Policy (memory %d, CPU %v, procs %d, files %d, uid %d)",
			p.Memory, p.CPU, p.Procs, p.Files, p.UID)
	}
	if p.Memory == 0 {
		p.Memory = DefaultMemory
	}
	if p.CPU == 0 {
		p.CPU = DefaultCPU
	}
	if p.Procs == 0 {
		p.Procs = DefaultProcs
	}
	if p.Files == 0 {
		p.Files = DefaultFiles
	}
	if p.UID == 0 {
		p.UID = DefaultUID
	}
	for _, kv := range p.Env {
		if !strings.Contains(kv, "=") {
			return p, fmt.Errorf("sandbox: Policy.Env entry %q is not KEY=value", kv)
		}
	}
	return p, nil
}

// cpuSeconds is the CPU limit in whole seconds (at least 1), as setrlimit wants it.
func (p Policy) cpuSeconds() uint64 {
	s := uint64((p.CPU + time.Second - 1) / time.Second)
	return max(s, 1)
}

// within reports whether path is dir or beneath it (both clean and absolute).
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// Limits says the policy's resource limits in words, zero fields at their defaults: "memory
// 4 GiB, CPU 60 s, 256 tasks, 256 files".
func (p Policy) Limits() string {
	mem, cpu, procs, files := p.Memory, p.CPU, p.Procs, p.Files
	if mem == 0 {
		mem = DefaultMemory
	}
	if cpu == 0 {
		cpu = DefaultCPU
	}
	if procs == 0 {
		procs = DefaultProcs
	}
	if files == 0 {
		files = DefaultFiles
	}
	seconds := Policy{CPU: cpu}.cpuSeconds() // RLIMIT_CPU counts whole seconds
	return fmt.Sprintf("memory %s, CPU %s, %d tasks, %d files", bytesWords(mem), secondsWords(time.Duration(seconds)*time.Second), procs, files)
}

// bytesWords formats a byte count for people: "2 GiB", "256 MiB", "1.5 GiB", "4096 B".
func bytesWords(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".") + " " + units[i]
}

// secondsWords formats a duration as seconds: "60 s", "0.5 s", "1.25 s".
func secondsWords(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", d.Seconds()), "0"), ".") + " s"
}
