package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Isolation is what this machine can enforce now, probed once by starting a trivial child.
type Isolation struct {
	Landlock    int    // Landlock ABI version, 0 when the kernel has none
	UserNS      bool   // own user namespace (tasks counted per sandbox; the non-root path needs it for the others)
	PIDNS       bool   // own PID namespace: killing its PID 1 kills the whole tree
	NetNS       bool   // own network namespace: no network at all
	IPCNS       bool   // own System V IPC / POSIX message queue namespace
	SeparateUID bool   // the child runs as another uid than the caller (root only)
	UID         int    // the child's uid as the rest of the machine sees it
	Note        string // why a mechanism is missing ("" when none is)
}

// mode is the set of mechanisms a start uses.
type mode struct {
	userNS, pidNS, netNS, ipcNS, switchUID bool
}

var (
	probeOnce sync.Once
	probed    Isolation
)

// Probe says what this machine can enforce. It runs once per process (a trivial child, a few
// milliseconds); later calls return the same answer. It needs Main to have been called.
func Probe() Isolation {
	probeOnce.Do(func() { probed = probe() })
	return probed
}

func probe() Isolation {
	iso := Isolation{UID: os.Getuid()}
	if v, err := llsyscall.LandlockGetABIVersion(); err == nil && v > 0 {
		iso.Landlock = v
	}
	if !mainCalled {
		iso.Note = "sandbox.Main was not called, so no child could be probed"
		return iso
	}
	root := os.Getuid() == 0
	full := mode{userNS: true, pidNS: true, netNS: true, ipcNS: true, switchUID: root}
	tries := []mode{full}
	if root {
		tries = append(tries, mode{pidNS: true, netNS: true, ipcNS: true, switchUID: true}, mode{switchUID: true})
	}
	tries = append(tries, mode{})
	var notes []string
	for _, m := range tries {
		err := probeMode(m)
		if err == nil {
			iso.UserNS, iso.PIDNS, iso.NetNS, iso.IPCNS = m.userNS, m.pidNS, m.netNS, m.ipcNS
			iso.SeparateUID = m.switchUID
			if m.switchUID {
				iso.UID = DefaultUID
			}
			break
		}
		notes = append(notes, fmt.Sprintf("%s: %v", m.words(), err))
	}
	iso.Note = strings.Join(notes, "; ")
	return iso
}

// probeMode starts the trampoline in probe mode with m's mechanisms.
func probeMode(m mode) error {
	c := exec.Command("/proc/self/exe")
	c.Args = []string{"mhalab-sandbox-probe"}
	c.Env = []string{childEnv + "=probe"}
	c.SysProcAttr = m.attr(DefaultUID)
	return c.Run()
}

// attr is the SysProcAttr that starts a trampoline with m's mechanisms; uid is the child's
// uid (and gid) when m.switchUID.
func (m mode) attr(uid int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if m.userNS {
		a.Cloneflags |= syscall.CLONE_NEWUSER
	}
	if m.pidNS {
		a.Cloneflags |= syscall.CLONE_NEWPID
	}
	if m.netNS {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	if m.ipcNS {
		a.Cloneflags |= syscall.CLONE_NEWIPC
	}
	switch {
	case m.switchUID:
		// No supplementary groups: Go calls setgroups(0) since Groups is empty.
		a.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
		if m.userNS {
			a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			a.GidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			a.GidMappingsEnableSetgroups = true // root writes the maps: dropping groups is allowed
		}
	case m.userNS:
		// The caller's own ids, mapped to themselves: files the child creates are the caller's.
		// Supplementary groups cannot be dropped here (setgroups is denied in a user namespace
		// an unprivileged user creates).
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	return a
}

func (m mode) words() string {
	var ns []string
	for _, x := range []struct {
		on   bool
		name string
	}{{m.userNS, "user"}, {m.pidNS, "pid"}, {m.netNS, "net"}, {m.ipcNS, "ipc"}} {
		if x.on {
			ns = append(ns, x.name)
		}
	}
	s := "no namespaces"
	if len(ns) > 0 {
		s = strings.Join(ns, "+") + " namespaces"
	}
	if m.switchUID {
		s += ", separate uid"
	}
	return s
}

func (i Isolation) mode() mode {
	return mode{userNS: i.UserNS, pidNS: i.PIDNS, netNS: i.NetNS, ipcNS: i.IPCNS, switchUID: i.SeparateUID}
}

// landlockWords lists what Landlock confines at an ABI version.
func landlockWords(abi int) string {
	if abi <= 0 {
		return "no landlock (files not confined by path)"
	}
	what := []string{"files"}
	if abi >= 4 {
		what = append(what, "TCP")
	}
	if abi >= 6 {
		what = append(what, "signals", "abstract sockets")
	}
	if abi >= 9 {
		what = append(what, "unix sockets")
	}
	if abi >= 10 {
		what = append(what, "UDP")
	}
	return fmt.Sprintf("landlock ABI %d (%s)", abi, strings.Join(what, ", "))
}

// String is one line: "landlock ABI 7 (files, TCP, signals, abstract sockets); user+pid+net+ipc
// namespaces; uid 65534; limits: memory 2 GiB, CPU 60 s, 256 tasks, 256 files".
func (i Isolation) String() string {
	uid := fmt.Sprintf("uid %d", i.UID)
	if !i.SeparateUID {
		uid += " (the caller's)"
	}
	s := fmt.Sprintf("%s; %s; %s; limits: %s", landlockWords(i.Landlock), i.mode().words(), uid, Policy{}.Limits())
	if !i.PIDNS {
		s += "; whole-tree kill: process group only"
	}
	if !i.NetNS {
		s += "; network: not isolated"
	}
	return s
}

// Confined reports whether file-system confinement (Landlock), network denial (a network
// namespace) and the whole-tree kill (a PID namespace) are all in force.
func (i Isolation) Confined() bool {
	return i.Landlock >= 1 && i.NetNS && i.PIDNS
}
