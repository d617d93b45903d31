package fastgo

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

// BuildNote is one sentence for a program that has picked the go backend, or "" when there is
// nothing to say: it is not empty only when this binary runs fastgo's plain-Go element-wise loops
// on an amd64 CPU that has the AVX2 or AVX-512 their vector versions need — that is, when the
// binary was built without GOEXPERIMENT=simd (plain `go build`, `go run`). The float32 matrix
// products run an assembly kernel either way (kernel_avx2.go, kernel_avx512.go); exp, the row sums and maxima,
// the float32 binary ops and the packed Q8_0/Q4_1 products do not: fastgo's BenchmarkMHA/long
// took 1.72 s a pass in such a binary against ~0.45 s built with GOEXPERIMENT=simd (seed003: 136
// against ~77 ms). The command prints it with the backend line (internal/cli); fastgo itself never
// prints.
func BuildNote() string {
	if InstallError() != nil {
		return "" // nothing installed: InstallError is the sentence to print
	}
	return buildNote(vecName() != "go", runtime.GOARCH, cpu.X86.HasAVX2 || cpu.X86.HasAVX512F)
}

// buildNote is BuildNote's rule: simd says whether the vector element-wise loops run, arch is
// GOARCH, wide whether the CPU has AVX2 or AVX-512.
func buildNote(simd bool, arch string, wide bool) string {
	if simd || arch != "amd64" || !wide {
		return ""
	}
	return "this binary was built without GOEXPERIMENT=simd, so the go backend's element-wise ops " +
		"(exp, sums, broadcasts) and packed Q8_0/Q4_1 products run plain Go, several times slower than " +
		"the AVX2/AVX-512 loops this CPU could run: build it with `make build` " +
		"(or `GOEXPERIMENT=simd go build ./cmd/mhalab`, Go 1.26)"
}
