package fastgo

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A team of helper goroutines that stay awake between parallel ops.
//
// Decoding a SmolLM2 token runs ~120 packed matrix–vector products of 15–70 µs each and ~60
// small attention products, a few µs of element-wise ops apart. A goroutine started per op
// (parallelFor before the team) found its thread parked since the last op, and waking it (a
// futex wake; on a virtual machine an inter-processor interrupt) took about as long as the
// product: the second core joined late or not at all. The team's helpers instead poll for the
// next job for teamSpin after their last one, yielding their processor to other goroutines
// now and then (runtime.Gosched), and only then sleep on a condition variable — as OpenMP's
// threads do, but for a short, bounded time, so an idle program costs nothing after it.
//
// One job at a time: a parallelFor that finds the team busy (one nested in a job's function, or
// another goroutine's) starts goroutines as before. Helpers are started on first use, one fewer
// than the largest worker count asked for (the caller works too), and live as long as the
// process; a job with fewer workers lets only that many helpers take ranges (seats).

// teamSpin is how long a helper polls for a new job after its last one before it sleeps: longer
// than the longest one-core stretch of a SmolLM2 decoding step (RoPE, the cache and attention
// between a layer's qkv and o products). With 60 µs the helper slept there and woke late for
// the next products: the caller took 73% of the o and down products' ranges and 69% of
// gate+up's, not half (ranges counted per job, BenchmarkDecodeStep); with 250 µs, 500 µs, 1 ms
// and 4 ms each took half, and the step ran 8% faster (old and new test binaries alternated,
// 3 rounds: 113–124 tokens/s against 123–130). A helper that finds no job sleeps after it, so
// an idle program costs nothing once it has passed.
const teamSpin = 500 * time.Microsecond

// The polls are plain atomic loads, not runtime.Gosched: a Gosched puts the goroutine on the
// global run queue and wakes an idle processor's thread (runtime.wakep, a futex wake) to look
// for work — in BenchmarkDecodeStep's profile those polls cost more CPU (goschedImpl, wakep,
// futex: ~10% of the samples) than the helper's share of the products. Every yieldPolls polls
// a poller instead gives its core to the operating system (osYield, sched_yield on Linux): on a
// machine with more threads than cores it lets the thread it waits for run (the caller, or a
// helper preempted mid-range), and it returns at once when the core is free. A helper also
// reads the clock there, and yields its processor to the program's other goroutines every
// teamYield. The caller waiting for the last ranges polls waitPolls times (a few µs) before
// its first osYield: the helpers' ranges are usually that close to done, and on a loaded
// machine a yield can hand the core to another process for a whole time slice
// (BenchmarkMHA/seed003, yielding from the first polls: 143 and 149 ms against 130 and 129).
const (
	yieldPolls = 128
	waitPolls  = 4096
	teamYield  = 50 * time.Microsecond
)

// teamJob is one parallelFor's ranges [c·step, min((c+1)·step, n)), c < chunks.
type teamJob struct {
	fn              func(lo, hi int)
	n, step, chunks int
	next, done      atomic.Int64 // ranges handed out, ranges finished
	seats           atomic.Int64 // helpers that may still join
}

// work runs ranges of j until none is left.
func (j *teamJob) work() {
	for {
		c := int(j.next.Add(1)) - 1
		if c >= j.chunks {
			return
		}
		j.fn(c*j.step, min((c+1)*j.step, j.n))
		j.done.Add(1)
	}
}

// team is the process's helpers; theTeam is the one parallelFor uses.
type team struct {
	busy     sync.Mutex // held by the caller of the job in progress
	grow     sync.Mutex // guards helpers
	helpers  int
	seq      atomic.Uint64           // jobs published
	job      atomic.Pointer[teamJob] // the job in progress, nil between jobs
	sleeping atomic.Int32            // helpers waiting on wake
	mu       sync.Mutex              // wake's lock
	wake     *sync.Cond
}

var theTeam = newTeam()

func newTeam() *team {
	t := &team{}
	t.wake = sync.NewCond(&t.mu)
	return t
}

// run computes job j on the calling goroutine and at most workers−1 helpers and reports
// whether it did (false: the team is busy; nothing ran).
func (t *team) run(j *teamJob, workers int) bool {
	if !t.busy.TryLock() {
		return false
	}
	defer t.busy.Unlock()
	t.ensure(workers - 1)
	j.seats.Store(int64(workers - 1))
	t.job.Store(j)
	t.seq.Add(1)
	if t.sleeping.Load() > 0 {
		t.mu.Lock()
		t.wake.Broadcast()
		t.mu.Unlock()
	}
	j.work()
	for polls := 1; j.done.Load() < int64(j.chunks); polls++ { // ranges still running on helpers
		if polls >= waitPolls && polls%yieldPolls == 0 {
			osYield()
		}
		if polls%(64*yieldPolls) == 0 {
			runtime.Gosched() // a helper goroutine preempted mid-range needs a processor
		}
	}
	t.job.Store(nil)
	return true
}

// ensure starts helpers until there are at least n.
func (t *team) ensure(n int) {
	t.grow.Lock()
	defer t.grow.Unlock()
	for t.helpers < n {
		t.helpers++
		go t.helper(t.seq.Load())
	}
}

// helper takes ranges of each job published after seen: it polls for teamSpin after a job,
// then sleeps until the next one. A helper may pick up a job that has just finished (its
// ranges all taken): work then returns at once.
func (t *team) helper(seen uint64) {
	for {
		start := time.Now()
		yielded := time.Duration(0)
		for polls := 1; t.seq.Load() == seen; polls++ {
			warmed := theWarmer.step() // warm.go: the next products' rows, while there is no job
			if polls%yieldPolls != 0 {
				continue
			}
			if !warmed {
				osYield()
			}
			since := time.Since(start)
			if since > teamSpin {
				t.sleep(seen)
				break
			}
			if since-yielded > teamYield {
				yielded = since
				runtime.Gosched()
			}
		}
		seen = t.seq.Load()
		if j := t.job.Load(); j != nil && j.seats.Add(-1) >= 0 {
			j.work()
		}
	}
}

// sleep waits until a job after seen is published. The count of sleepers is raised under the
// lock before seq is checked again, so a job published meanwhile either is seen here or finds
// a sleeper to wake.
func (t *team) sleep(seen uint64) {
	t.mu.Lock()
	t.sleeping.Add(1)
	for t.seq.Load() == seen {
		t.wake.Wait()
	}
	t.sleeping.Add(-1)
	t.mu.Unlock()
}
