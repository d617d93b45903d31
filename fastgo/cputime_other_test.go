//go:build !unix

package fastgo_test

import "testing"

func cpuMS() float64 { return 0 }

func reportCPU(b *testing.B, start float64) {}
