package fastgo

import (
	"strings"
	"testing"
)

func TestBuildNote(t *testing.T) {
	for _, c := range []struct {
		simd bool
		arch string
		wide bool
		say  bool
	}{
		{false, "amd64", true, true},   // plain go build on an AVX2 machine: say how to build
		{true, "amd64", true, false},   // built with GOEXPERIMENT=simd: nothing to say
		{false, "amd64", false, false}, // no AVX2: the plain kernel is all this CPU can run
		{false, "arm64", true, false},  // no SIMD kernels for arm64
	} {
		note := buildNote(c.simd, c.arch, c.wide)
		if (note != "") != c.say || (c.say && !strings.Contains(note, "GOEXPERIMENT=simd")) {
			t.Errorf("buildNote(simd %v, %s, wide %v) = %q", c.simd, c.arch, c.wide, note)
		}
	}
	// In this test binary (make test builds with GOEXPERIMENT=simd) the answer follows SIMD().
	if SIMD() && BuildNote() != "" {
		t.Errorf("a SIMD kernel runs, yet BuildNote() = %q", BuildNote())
	}
}
