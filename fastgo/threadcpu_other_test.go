//go:build !linux

package fastgo

// threadCPUNS: not available here (-1).
func threadCPUNS() int64 { return -1 }
