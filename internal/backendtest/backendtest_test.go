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
