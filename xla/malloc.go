package xla

import (
	"os"
	"strings"
	"sync"
)

// The C allocator under the XLA CPU backend.
//
// XLA's CPU client allocates every execution's temporary buffers (one block holding all of the
// graph's intermediate tensors) and its outputs with the C library's malloc, and frees them when
// the execution ends. glibc serves a block larger than its mmap threshold (128 KiB, raised
// automatically up to 32 MiB) with a fresh mmap and returns it with munmap on free, so every
// execution of a graph whose temporaries exceed 32 MiB faults in and zeroes those pages again:
// multi-head attention at B32 L128 E512 h8 has a 40 MiB temporary block, ~10,800 page faults
// per pass and a quarter of the process's CPU time in the kernel (perf record, 2026-12-02).
//
// tuneMalloc raises glibc's mmap threshold to MallocMmapThreshold and its trim threshold to
// MallocTrimThreshold, so that such blocks come from the heap and stay there between
// executions. Blocks above the mmap threshold are still mapped and unmapped each time, as before,
// and glibc's per-thread arenas cannot hold a block above 64 MiB anyway. A value the user set —
// $MALLOC_MMAP_THRESHOLD_, $MALLOC_TRIM_THRESHOLD_, or glibc.malloc.mmap_threshold /
// glibc.malloc.trim_threshold in $GLIBC_TUNABLES — is kept: glibc read it at start-up and
// tuneMalloc leaves that threshold alone.
const (
	MallocMmapThreshold = 64 << 20  // bytes: blocks up to this size come from malloc's heap
	MallocTrimThreshold = 128 << 20 // bytes of free memory malloc keeps at the top of a heap
)

// Environment variables by which a user sets glibc's thresholds (read by glibc at start-up).
const (
	mallocMmapEnv    = "MALLOC_MMAP_THRESHOLD_"
	mallocTrimEnv    = "MALLOC_TRIM_THRESHOLD_"
	glibcTunablesEnv = "GLIBC_TUNABLES"
)

var mallocOnce sync.Once

// tuneMalloc sets glibc's thresholds once per process (see MallocMmapThreshold), unless the
// user set them.
func tuneMalloc() {
	mallocOnce.Do(func() {
		mmap, trim := mallocPlan(os.Getenv)
		if mmap > 0 {
			setMallocMmapThreshold(mmap)
		}
		if trim > 0 {
			setMallocTrimThreshold(trim)
		}
	})
}

// mallocPlan returns the thresholds to set given the environment getenv reads: each is its
// constant, or 0 when the user set that threshold.
func mallocPlan(getenv func(string) string) (mmap, trim int) {
	tunables := getenv(glibcTunablesEnv)
	mmap, trim = MallocMmapThreshold, MallocTrimThreshold
	if getenv(mallocMmapEnv) != "" || strings.Contains(tunables, "glibc.malloc.mmap_threshold") {
		mmap = 0
	}
	if getenv(mallocTrimEnv) != "" || strings.Contains(tunables, "glibc.malloc.trim_threshold") {
		trim = 0
	}
	return mmap, trim
}
