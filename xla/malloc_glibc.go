//go:build linux && cgo

package xla

/*
#include <malloc.h>
#include <features.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
static const char *mhalab_glibc_version(void) { return gnu_get_libc_version(); }
#else
static const char *mhalab_glibc_version(void) { return ""; }
#endif
*/
import "C"

// setMallocMmapThreshold calls mallopt(M_MMAP_THRESHOLD, bytes) (glibc applies it; musl's
// mallopt does nothing — a hint either way, so its result is not needed).
func setMallocMmapThreshold(bytes int) { C.mallopt(C.M_MMAP_THRESHOLD, C.int(bytes)) }

// setMallocTrimThreshold calls mallopt(M_TRIM_THRESHOLD, bytes).
func setMallocTrimThreshold(bytes int) { C.mallopt(C.M_TRIM_THRESHOLD, C.int(bytes)) }

// glibcVersion returns the running glibc's version ("2.36"), or "" under another C library.
func glibcVersion() string { return C.GoString(C.mhalab_glibc_version()) }
