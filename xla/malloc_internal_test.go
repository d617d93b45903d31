package xla

import "testing"

// TestMallocPlanKeepsTheUsersThresholds: a threshold the user set in the environment (glibc
// read it at start-up) is left alone; the other one is still set.
func TestMallocPlanKeepsTheUsersThresholds(t *testing.T) {
	for _, c := range []struct {
		env        map[string]string
		mmap, trim int
	}{
		{nil, MallocMmapThreshold, MallocTrimThreshold},
		{map[string]string{"MALLOC_MMAP_THRESHOLD_": "131072"}, 0, MallocTrimThreshold},
		{map[string]string{"MALLOC_TRIM_THRESHOLD_": "0"}, MallocMmapThreshold, 0},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=4096:glibc.malloc.trim_threshold=1"}, 0, 0},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_max=1"}, MallocMmapThreshold, MallocTrimThreshold},
	} {
		mmap, trim := mallocPlan(func(k string) string { return c.env[k] })
		if mmap != c.mmap || trim != c.trim {
			t.Errorf("environment %v: thresholds set (mmap %d, trim %d), want (%d, %d)", c.env, mmap, trim, c.mmap, c.trim)
		}
	}
}
