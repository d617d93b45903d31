package fastgo

import (
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
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
	// In this test binary the answer follows the vector loops: none in a plain build on an AVX2
	// CPU (seen failing when the rule still asked whether a SIMD matmul kernel ran, which the
	// assembly kernel now does in every amd64 build).
	wide := cpu.X86.HasAVX2 || cpu.X86.HasAVX512F
	if want := vecName() == "go" && runtime.GOARCH == "amd64" && wide && InstallError() == nil; (BuildNote() != "") != want {
		t.Errorf("vector loops %q on %s (AVX2/AVX-512 %v): BuildNote() = %q", vecName(), runtime.GOARCH, wide, BuildNote())
	}
}
