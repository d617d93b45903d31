//go:build unix

package smollm2

import (
	"syscall"
	"testing"
	"time"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/models/quant"
)

// BenchmarkDecodeStep times one cached decoding step (one token; a 128-position cache, as the bench's 93 + 32) of the packed runner on the
// pure-Go backend (the float32 runner with MHALAB_FASTGO=0); profile it with -cpuprofile.
func BenchmarkDecodeStep(b *testing.B) {
	backend, err := backendtest.Get("go")
	if err != nil {
		b.Skip(err)
	}
	m := testModel(b)
	r, err := m.NewRunner(backend)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Finalize()
	s, err := r.NewSession(128)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Finalize()
	if _, err := s.Feed([]int{1, 2, 3, 4}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(0, "ns/op")
	cpu0 := processCPU()
	b.ResetTimer()
	for i := range b.N {
		if s.Len() == s.Cap() {
			s.Reset()
		}
		if _, err := s.Feed([]int{100 + i%50}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	// CPU time per token, all threads: on a machine shared with other work it moves much less
	// than the elapsed time, and compares with another engine's (llama.cpp's) the same way.
	b.ReportMetric((processCPU()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/token")
}

// processCPU is the CPU time (user + system) this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPrefill times feeding a 93-token prompt (the bench's) into an empty cache, with the
// packed runner (Packed) and the float32 one (Float32), on the pure-Go backend.
func BenchmarkPrefill(b *testing.B) {
	backend, err := backendtest.Get("go")
	if err != nil {
		b.Skip(err)
	}
	m := testModel(b)
	prompt := make([]int, 93)
	for i := range prompt {
		prompt[i] = 100 + i
	}
	for _, packed := range []bool{true, false} {
		name := map[bool]string{true: "Packed", false: "Float32"}[packed]
		b.Run(name, func(b *testing.B) {
			r, err := m.newRunner(backend, packed && quant.Available(backend))
			if err != nil {
				b.Fatal(err)
			}
			defer r.Finalize()
			s, err := r.NewSession(128)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Finalize()
			if _, err := s.Feed(prompt); err != nil { // compiles
				b.Fatal(err)
			}
			cpu0 := processCPU()
			b.ResetTimer()
			for range b.N {
				s.Reset()
				if _, err := s.Feed(prompt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((processCPU()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/op")
		})
	}
}
