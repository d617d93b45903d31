package xla

import (
	"os"
	"strconv"
	"strings"
)

// Huge pages for XLA's temporaries.
//
// XLA's CPU client allocates each execution's block of temporaries with posix_memalign on one of
// its worker threads. Those threads allocate from glibc's per-thread arenas, which hold at most
// 64 MiB; a larger block is mapped with mmap whatever the thresholds tuneMalloc sets, and
// unmapped when the execution ends, so every execution faults in and zeroes every 4 KiB page of
// it again. Attention at B1 L4096 E512 h8 (causal, flash) has a 108 MiB block: ~28,000 page
// faults per execution. glibc 2.35 and later can ask the kernel for transparent huge pages for
// the blocks it maps (the tunable glibc.malloc.hugetlb=1: madvise(MADV_HUGEPAGE) on each), which
// faults such a block in 2 MiB at a time, 512 times fewer faults; the pages are still zeroed.
// glibc reads tunables only when a program starts, from $GLIBC_TUNABLES, so the program has to
// be started with it: ExecWithHugePages starts the running program again with it. What the
// block of that attention holds, and why it stays above glibc's 32 MiB: mhalib/flashxla.go,
// "XLA's block of temporaries".

// Environment variables of ExecWithHugePages.
const (
	// HugePagesEnv set to "0" keeps ExecWithHugePages from starting the program again.
	HugePagesEnv = "MHALAB_HUGEPAGES"
	// hugePagesExecEnv marks the program ExecWithHugePages started, so that it never starts
	// it twice (a C library that drops $GLIBC_TUNABLES would otherwise loop).
	hugePagesExecEnv = "MHALAB_HUGEPAGES_EXEC"
	// hugetlbTunable is glibc's tunable for transparent huge pages in malloc.
	hugetlbTunable = "glibc.malloc.hugetlb"
)

// thpEnabledFile holds the kernel's transparent-huge-page mode, the chosen one in brackets:
// "always [madvise] never".
const thpEnabledFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// ExecWithHugePages starts the running program again (execve of /proc/self/exe, same process
// ID, arguments and open files) with glibc.malloc.hugetlb=1 added to $GLIBC_TUNABLES, when that
// makes XLA's CPU backend fault its large temporaries in with huge pages (see above): on Linux
// with glibc 2.35 or later and the kernel's transparent huge pages in "madvise" mode. Call it
// first thing in main, before the program has done anything it would do twice.
//
// It returns without doing anything when the tunable is set already, when $MHALAB_HUGEPAGES is
// "0", in the program it started, in a set-user-ID program (glibc ignores the tunables there),
// with another C library or a kernel whose huge pages are "always" (already used) or "never",
// and on other systems. When execve fails it returns the error and the program goes on as it
// is. The cost of the second start is that of loading the binary again, a few milliseconds;
// the memory cost is that blocks mapped by malloc are rounded up to 2 MiB.
func ExecWithHugePages() error {
	if !hugePagesWanted(os.Getenv, readTHPMode(), glibcVersion(), os.Getuid() != os.Geteuid()) {
		return nil
	}
	env := append(withHugetlbTunable(os.Environ()), hugePagesExecEnv+"=1")
	return execSelf(env)
}

// hugePagesWanted reports whether ExecWithHugePages starts the program again, given the
// environment getenv reads, the kernel's THP mode ("madvise", "always", "never" or "" when
// unknown), the C library's version ("2.36"; "" when not glibc) and whether the program runs
// set-user-ID.
func hugePagesWanted(getenv func(string) string, thpMode, glibc string, setuid bool) bool {
	switch {
	case getenv(HugePagesEnv) == "0", getenv(hugePagesExecEnv) != "", setuid:
		return false
	case strings.Contains(getenv(glibcTunablesEnv), hugetlbTunable):
		return false // the user chose
	case thpMode != "madvise":
		return false
	}
	return glibcAtLeast(glibc, 2, 35)
}

// withHugetlbTunable returns env (KEY=value entries) with glibc.malloc.hugetlb=1 appended to
// GLIBC_TUNABLES (colon-separated), or GLIBC_TUNABLES=glibc.malloc.hugetlb=1 added.
func withHugetlbTunable(env []string) []string {
	out := make([]string, 0, len(env)+1)
	done := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, glibcTunablesEnv+"="); ok && !done {
			if v != "" {
				v += ":"
			}
			kv, done = glibcTunablesEnv+"="+v+hugetlbTunable+"=1", true
		}
		out = append(out, kv)
	}
	if !done {
		out = append(out, glibcTunablesEnv+"="+hugetlbTunable+"=1")
	}
	return out
}

// readTHPMode returns the kernel's transparent-huge-page mode from thpEnabledFile: the word in
// brackets, or "" when the file cannot be read.
func readTHPMode() string {
	b, err := os.ReadFile(thpEnabledFile)
	if err != nil {
		return ""
	}
	return thpMode(string(b))
}

// thpMode returns the bracketed word of a THP "enabled" file: "always [madvise] never" → "madvise".
func thpMode(s string) string {
	i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return ""
	}
	return s[i+1 : j]
}

// glibcAtLeast reports whether version ("2.36", "2.35.1") is at least major.minor.
func glibcAtLeast(version string, major, minor int) bool {
	parts := strings.Split(version, ".")
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
