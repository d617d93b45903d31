//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import "unsafe"

// prefetchLines asks the CPU to bring the cache lines of [p, p+n) into its caches (PREFETCHT0,
// one per 64 bytes): a hint, which reads nothing the program sees and cannot fault.
func prefetchLines(p unsafe.Pointer, n int) { prefetchAddr(uintptr(p), n) }

// canPrefetch: prefetchAddr asks the CPU for lines (warm.go).
const canPrefetch = true

// prefetchAddr is prefetchLines on an address, which the program may no longer hold (warm.go):
// a prefetch of any address is a hint that cannot fault. Go has no prefetch the code outside
// the runtime can call, hence the few lines of assembly (prefetch_simd_amd64.s).
//
//go:noescape
func prefetchAddr(addr uintptr, n int)
