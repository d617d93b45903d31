package fastgo

import (
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
)

// TestBackendParallelism: the worker limit read from simplego's unexported fields (through
// field indices looked up once) follows GOMLX_BACKEND's "parallelism=N": N, 1 for 0 (sequential),
// and GOMAXPROCS for a negative or unset one.
func TestBackendParallelism(t *testing.T) {
	for _, c := range []struct {
		config string
		want   int
	}{{"parallelism=3", 3}, {"parallelism=0", 1}, {"parallelism=-1", defaultWorkers()}, {"parallelism=7", 7}} {
		b, err := simplego.New(c.config)
		if err != nil {
			t.Fatal(err)
		}
		if got := backendParallelism(b.(*simplego.Backend)); got != c.want {
			t.Errorf("%s: backendParallelism %d, want %d", c.config, got, c.want)
		}
		b.Finalize()
	}
}
