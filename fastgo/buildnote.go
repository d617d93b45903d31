package fastgo

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

// BuildNote is one sentence for a program that has picked the go backend, or "" when there is
// nothing to say: it is not empty only when this binary runs fastgo's plain-Go micro-kernel on an
// amd64 CPU that has the AVX2 or AVX-512 the SIMD kernels need — that is, when the binary was built
// without GOEXPERIMENT=simd (plain `go build`, `go run`). The command prints it with the backend
// line (internal/cli); fastgo itself never prints.
func BuildNote() string {
	if InstallError() != nil {
		return "" // nothing installed: InstallError is the sentence to print
	}
	return buildNote(SIMD(), runtime.GOARCH, cpu.X86.HasAVX2 || cpu.X86.HasAVX512F)
}

// buildNote is BuildNote's rule: simd says whether a SIMD kernel runs, arch is GOARCH, wide
// whether the CPU has AVX2 or AVX-512.
func buildNote(simd bool, arch string, wide bool) string {
	if simd || arch != "amd64" || !wide {
		return ""
	}
	return "this binary was built without GOEXPERIMENT=simd, so the go backend's matrix products " +
		"run the plain-Go kernel, several times slower than the AVX2/AVX-512 kernels this CPU could " +
		"run: build it with `make build` (or `GOEXPERIMENT=simd go build ./cmd/mhalab`, Go 1.26)"
}
