// Package sandbox runs an untrusted compiled Go program (a student's code linked into a test
// binary, possibly loading the XLA CPU PJRT plugin) with the least rights that work, using the
// kernel's own mechanisms through maintained libraries:
//
//   - namespaces (user, PID, network, IPC) set up by os/exec's SysProcAttr: the child sees no
//     network at all (a fresh network namespace has only a loopback interface that is down), no
//     processes but its own, and killing its PID 1 kills every process it started;
//   - a separate unprivileged uid/gid (default 65534, nobody) when the caller is root;
//   - resource limits (setrlimit): address space, CPU time, tasks (processes+threads, counted
//     per sandbox when it has its own user namespace), open files, file size, no core dumps;
//   - Landlock (github.com/landlock-lsm/go-landlock): read/execute only on the system folders,
//     the program and Policy.ReadOnly; read/write only on Policy.Dir; TCP bind/connect denied;
//     signals and abstract unix sockets scoped to the sandbox.
//
// # How a sandbox starts
//
// Start re-executes /proc/self/exe (the grader's own binary) with one environment variable that
// holds the child's configuration as JSON. That process (the trampoline) must reach [Main]
// first thing: Main sees the variable, sets the resource limits, changes to the working folder,
// enforces the Landlock ruleset (built by the parent, passed as a file descriptor) on its one
// locked OS thread after PR_SET_NO_NEW_PRIVS, and execs the target, which therefore runs as
// PID 1 of the sandbox's PID namespace. When it exits the kernel kills everything else in the
// namespace; when the context ends, the parent kills PID 1 and so the whole tree.
//
// Why the target is PID 1 rather than a child of a small init: its exit status (and the signal
// that killed it, such as SIGKILL at the CPU limit) reaches the parent directly, no second Go
// runtime shares the task and memory limits, and the kernel's "PID 1 exits → namespace dies"
// rule is the whole-tree guarantee. The cost: orphaned grandchildren are not reaped until the
// end (they stay zombies, counted in the task limit), and a signal sent from inside the
// namespace to PID 1 is ignored unless the program handles it (Go handles them).
//
// # Different uid and unreadable paths
//
// As root the child runs as uid/gid 65534, so it cannot read the caller's files through plain
// Unix permissions either. Dir is chowned to that uid (recursively, without following links) and
// must be reachable by it (every folder above it searchable by "others"): Start returns an error
// naming the folder that is not. A ReadOnly path (or the program) that uid cannot reach — such
// as the PJRT plugin under /root/.local/lib/go-xla — is staged: hard-linked (copied when on
// another file system or not world-readable) into a fresh folder mode 0750 root:65534, and the
// child sees it there. [Cmd.Path] says where; Command also rewrites the program path, every
// argument and every Env value that names a staged path (or a path beneath one).
//
// As an ordinary user (a teacher's laptop) the child keeps the caller's uid inside its own user
// namespace; Landlock is then what keeps it out of the caller's files.
//
// # What the child can read
//
// Landlock grants read/execute on /usr, /lib*, /bin, /sbin; a short list of /etc files (the
// dynamic loader's cache and config, passwd, group, hosts, resolv.conf, localtime, TLS roots);
// /proc/cpuinfo, /proc/meminfo, /proc/stat, /sys/devices/system/cpu and transparent-huge-page
// settings; /dev/null (read/write), /dev/zero, /dev/urandom, /dev/random; the program and
// ReadOnly; everything beneath Dir (read/write). The child shares the machine's /proc mount
// (there is no mount namespace), so the trampoline adds a rule for its own /proc/<pid> only
// (still the target's after exec): /proc/1/cmdline, the grader's and the classmates'
// /proc/<pid> stay closed. A child of the target cannot read its own /proc/self (Go's runtime
// copes: its cgroup CPU-limit lookup falls back to the CPU count).
//
// # Memory
//
// The memory limit is RLIMIT_AS, address space rather than resident memory. The XLA CPU
// client for a 3-element graph reserves 2.45 GiB of it on a 2-core machine (117 MiB resident),
// most of it glibc's per-thread malloc arenas: the child gets MALLOC_ARENA_MAX=2 unless
// Policy.Env sets it (then 1.57 GiB), and the default limit is 4 GiB.
//
// # Fallbacks
//
// [Probe] says what this machine enforces; mechanisms that are missing are reported, never
// pretended. Without a PID namespace the whole-tree kill is a process-group kill, which a child
// escapes with setsid or setpgid; without a network namespace only TCP (Landlock ABI ≥ 4) is
// denied; without Landlock a non-root child can write wherever the caller can. Without a uid
// switch (root, but setuid unavailable) RLIMIT_NPROC does not bind: the kernel exempts root.
// A staged ReadOnly folder is readable to the child whole, whatever the modes beneath it.
//
// A Cmd is used by one goroutine. Its trampoline gets SIGKILL when the OS thread that started
// it exits (Pdeathsig): do not Start from a goroutine that called runtime.LockOSThread and
// returns before Wait.
package sandbox
