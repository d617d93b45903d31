//go:build !(linux && cgo)

package xla

// Without glibc (not Linux, or built without cgo) the thresholds are left alone.
func setMallocMmapThreshold(int) {}
func setMallocTrimThreshold(int) {}

// glibcVersion returns "": without cgo the C library is unknown, on other systems absent.
func glibcVersion() string { return "" }
