//go:build !(linux && cgo)

package xla

// Without glibc (not Linux, or built without cgo) the thresholds are left alone.
func setMallocMmapThreshold(int) {}
func setMallocTrimThreshold(int) {}
