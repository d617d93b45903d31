//go:build linux && cgo

package xla

/*
#include <malloc.h>
*/
import "C"

// setMallocMmapThreshold calls mallopt(M_MMAP_THRESHOLD, bytes) (glibc applies it; musl's
// mallopt does nothing — a hint either way, so its result is not needed).
func setMallocMmapThreshold(bytes int) { C.mallopt(C.M_MMAP_THRESHOLD, C.int(bytes)) }

// setMallocTrimThreshold calls mallopt(M_TRIM_THRESHOLD, bytes).
func setMallocTrimThreshold(bytes int) { C.mallopt(C.M_TRIM_THRESHOLD, C.int(bytes)) }
