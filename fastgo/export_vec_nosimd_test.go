//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

import "testing"

// VecLevels is empty: without GOEXPERIMENT=simd (or off amd64, or another Go) there are no
// vector loops.
func VecLevels() []string { return nil }

// SetVec accepts only "go": there are no vector loops in this build.
func SetVec(t testing.TB, level string) {
	if level != "go" {
		t.Fatalf("SetVec(%q): no vector loops in this build", level)
	}
}
