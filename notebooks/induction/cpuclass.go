package induction

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

// FixturesCPUFile names the file beside the committed runs (testdata/) that says which class of
// CPU trained them (CPUClass). XLA compiles its CPU kernels for the machine it runs on: an
// AVX-512 CPU and an AVX2 one round some sums differently, so a run retrained on another class
// of CPU is close to the committed one but not the same bytes (TestFixturesAreFresh).
const FixturesCPUFile = "fixtures-cpu.txt"

// CPUClass names the vector instruction set XLA's kernels use on this machine: "amd64-avx512",
// "amd64-avx2", "amd64" (neither) or GOARCH elsewhere.
func CPUClass() string {
	if runtime.GOARCH != "amd64" {
		return runtime.GOARCH
	}
	switch {
	case cpu.X86.HasAVX512F:
		return "amd64-avx512"
	case cpu.X86.HasAVX2:
		return "amd64-avx2"
	}
	return "amd64"
}
