package smollm2

import (
	"testing"

	"github.com/mhalab/mhalab/internal/backendtest"
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
}
