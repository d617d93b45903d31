package fastgo

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTeamCoversOnce: every index of [0, n) is visited exactly once, whoever runs the
// ranges — the team (one caller), goroutines (callers that find the team busy: 6 at once), and
// parallelFor nested in a range's function — for n not a multiple of the grain and worker
// counts from 2 to 9 (more than the helpers started so far: the team grows; fewer: seats).
func TestTeamCoversOnce(t *testing.T) {
	check := func(t *testing.T, n, grain, workers int, nested bool) {
		counts := make([]atomic.Int32, n)
		parallelFor(n, grain, workers, func(lo, hi int) {
			if nested && hi-lo > 1 {
				parallelFor(hi-lo, 1, workers, func(a, b int) {
					for i := lo + a; i < lo+b; i++ {
						counts[i].Add(1)
					}
				})
				return
			}
			for i := lo; i < hi; i++ {
				counts[i].Add(1)
			}
		})
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Fatalf("n=%d grain=%d workers=%d nested=%v: index %d visited %d times", n, grain, workers, nested, i, c)
			}
		}
	}
	for _, workers := range []int{2, 3, 9, 2} {
		for _, n := range []int{1, 2, 7, 64, 1000, 4097} {
			for _, grain := range []int{1, 3, 100} {
				for _, nested := range []bool{false, true} {
					check(t, n, grain, workers, nested)
				}
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for r := range 300 {
				check(t, 500+g+r%7, 1+r%5, 2+g%3, r%4 == 0)
			}
		})
	}
	wg.Wait()
}

// TestTeamSleepsWhenIdle: after the last job the helpers poll for only teamSpin, then sleep —
// a program that stops computing does not keep a core busy.
func TestTeamSleepsWhenIdle(t *testing.T) {
	parallelFor(1<<12, 1, 2, func(lo, hi int) {})
	deadline := time.Now().Add(2 * time.Second)
	for {
		theTeam.grow.Lock()
		helpers := theTeam.helpers
		theTeam.grow.Unlock()
		sleeping := int(theTeam.sleeping.Load())
		if helpers > 0 && sleeping == helpers {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d helpers asleep 2 s after the last job (they poll for %v)", sleeping, helpers, teamSpin)
		}
		time.Sleep(time.Millisecond)
	}
}
