//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

// canPrefetch: no prefetch instruction here; warm.go warms nothing.
const canPrefetch = false

func prefetchAddr(addr uintptr, n int) {}
