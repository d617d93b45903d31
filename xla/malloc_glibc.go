//go:build linux && cgo

package xla

/*
#include <malloc.h>
*/
import "C"

// setMallocMmapThreshold calls mallopt(M_MMAP_THRESHOLD, bytes) and reports whether the C
// library accepted it (glibc does; musl's mallopt does nothing and returns 0).
func setMallocMmapThreshold(bytes int) bool { return C.mallopt(C.M_MMAP_THRESHOLD, C.int(bytes)) == 1 }

// setMallocTrimThreshold calls mallopt(M_TRIM_THRESHOLD, bytes).
func setMallocTrimThreshold(bytes int) bool { return C.mallopt(C.M_TRIM_THRESHOLD, C.int(bytes)) == 1 }
