package fastgo_test

import (
	"testing"
	"time"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/mhalab/mhalab/fastgo"
)

// TestManyDotGeneralsInParallel: a graph of 16 independent batched products (as flash
// attention's tiles are) on a parallel executor with a worker pool of 2 slots (parallelism=1)
// finishes with fastgo's DotGeneral, which runs its own goroutines. GoMLX v0.26.0's own
// DotGeneral deadlocks on this graph (fastgo off, checked: every task in
// workersPool.WaitToStart, the test's 60 s timeout), because each node task holds a pool slot
// while execDotGeneralSmall waits for another; the tests' reference runs therefore use
// refBackend (ops one at a time).
func TestManyDotGeneralsInParallel(t *testing.T) {
	if !fastgo.Enabled() {
		t.Skip("fastgo is off (MHALAB_FASTGO=0 or not installed): GoMLX's DotGeneral deadlocks here")
	}
	backend, err := simplego.New("parallelism=1")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			exec := MustNewExec(backend, func(g *Graph) *Node {
				var sum *Node
				for j := range 16 {
					a := IotaFull(g, shapes.Make(dtypes.Float32, 4, 8, 8))   // [4, 8, 8]
					p := Einsum("bij,bjk->bik", a, AddScalar(a, float64(j))) // [4, 8, 8]
					if sum == nil {
						sum = p
					} else {
						sum = Add(sum, p)
					}
				}
				return sum
			})
			exec.MustExec()[0].FinalizeAll()
			exec.Finalize()
		}
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("20 runs of 16 parallel DotGenerals did not finish in 60 s: a deadlock in the executor's worker pool")
	}
}
