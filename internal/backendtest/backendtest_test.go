package backendtest

import (
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

func TestMain(m *testing.M) { Main(m, "internal/backendtest") }

func TestRunsOnEachBackend(t *testing.T) {
	Run(t, func(t *testing.T, b backends.Backend) {
		got := MustExecOnce(b, func(x *Node) *Node { return ReduceAllSum(Mul(x, x)) }, []float32{1, 2, 3})
		if v := got.Value().(float32); v != 14 {
			t.Fatalf("sum of squares on %s = %v, want 14", b.Name(), v)
		}
	})
}

// TestAvailableListsGo: the pure-Go backend is always built in, so Available lists it unless
// MHALAB_TEST_BACKENDS leaves it out (benchmarks iterate over Available's names).
func TestAvailableListsGo(t *testing.T) {
	if !wanted("go") {
		t.Skip("MHALAB_TEST_BACKENDS leaves out go")
	}
	got, missing := Available()
	if len(got) == 0 || got[0] != "go" {
		t.Fatalf("Available() = %v (missing %v), want go first", got, missing)
	}
}
