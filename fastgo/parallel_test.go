package fastgo

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallelForCoversOnce: every index of [0, n) is visited exactly once, and all of them
// before parallelFor returns — also when the ranges take the workers unequal times (a range
// still running on another goroutine must be waited for; one goroutine that finds no range
// left must not be).
func TestParallelForCoversOnce(t *testing.T) {
	for _, c := range []struct{ n, grain, workers int }{
		{0, 1, 2}, {1, 1, 2}, {7, 1, 2}, {100, 3, 2}, {1000, 64, 2}, {1000, 64, 1}, {4096, 1, 8}, {5, 100, 4},
	} {
		t.Run(fmt.Sprintf("n%d_g%d_w%d", c.n, c.grain, c.workers), func(t *testing.T) {
			seen := make([]atomic.Int32, c.n)
			parallelFor(c.n, c.grain, c.workers, func(lo, hi int) {
				if lo%3 == 1 {
					time.Sleep(200 * time.Microsecond) // some ranges slower
				}
				for i := lo; i < hi; i++ {
					seen[i].Add(1)
				}
			})
			for i := range seen {
				if v := seen[i].Load(); v != 1 {
					t.Fatalf("index %d visited %d times when parallelFor returned", i, v)
				}
			}
		})
	}
}
