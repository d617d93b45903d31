//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

import "testing"

// VecLevels is empty: without GOEXPERIMENT=simd (or off amd64, or another Go) there are no
// vector loops.
func VecLevels() []string { return nil }

// SetVec fails the test: there is no level to set.
func SetVec(t testing.TB, level string) { t.Fatalf("SetVec(%q): no vector loops in this build", level) }
