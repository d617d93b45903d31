//go:build unix

package smollm2

import (
	"fmt"
	"testing"

	"github.com/mhalab/mhalab/internal/backendtest"
)

// BenchmarkDecodeContext times one-token Feeds of sessions of 128 positions (the smollm2 bench's
// prompt + 32) and 2048 (chat's default context) on both backends: with the cache in
// KVCache.Step's chunks a step rewrites the tail chunk only ([1, Hkv, T, hd] per layer), not the
// whole [1, Hkv, maxLen, hd] cache. The positions filled do not change what a step copies, so the
// session holds only a few.
func BenchmarkDecodeContext(b *testing.B) {
	m := testModel(b)
	for _, spec := range []string{"go", "xla:cpu"} {
		backend, err := backendtest.Get(spec)
		if err != nil {
			b.Logf("%s: %v", spec, err)
			continue
		}
		r, err := m.NewRunner(backend)
		if err != nil {
			b.Fatal(err)
		}
		for _, capacity := range []int{128, 2048} {
			b.Run(fmt.Sprintf("%s/cap=%d", spec, capacity), func(b *testing.B) {
				s, err := r.NewSession(capacity)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Finalize()
				if _, err := s.Feed([]int{1, 2, 3, 4}); err != nil {
					b.Fatal(err)
				}
				benchSteps(b, s)
			})
		}
		r.Finalize()
	}
}

// benchSteps times b.N one-token Feeds of s (a session holding a few positions; it starts over
// when full), reporting tokens/s and the process's CPU time per token.
func benchSteps(b *testing.B, s *Session) {
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
