package fastgo

import (
	"sync"
	"sync/atomic"
)

// minParallelWork is the number of elements below which an element-wise op runs on the calling
// goroutine: starting goroutines costs about a microsecond, a few thousand simple element
// operations.
const minParallelWork = 1 << 15

// parallelFor calls fn on consecutive ranges [lo, hi) covering [0, n), on up to `workers`
// goroutines (the caller's included). Ranges hold at least `grain` items; there are up to 4 per
// goroutine, handed out as goroutines become free, so that a core slowed by other load does not
// hold the others up.
func parallelFor(n, grain, workers int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := min(4*workers, n/grain)
	if workers <= 1 || chunks <= 1 {
		fn(0, n)
		return
	}
	step := ceilDiv(n, chunks)
	chunks = ceilDiv(n, step)
	if theTeam.run(&teamJob{fn: fn, n: n, step: step, chunks: chunks}, min(workers, chunks)) {
		return // team.go: helpers that stay awake between ops
	}
	// The caller waits for the ranges, not for the goroutines: one that starts after the
	// others took every range (waking a parked thread can take longer than a small product)
	// finds none left and ends unwaited-for.
	var next atomic.Int64
	var pending sync.WaitGroup
	pending.Add(chunks)
	work := func() {
		for {
			c := int(next.Add(1)) - 1
			if c >= chunks {
				return
			}
			fn(c*step, min((c+1)*step, n))
			pending.Done()
		}
	}
	for range min(workers, chunks) - 1 {
		go work()
	}
	work()
	pending.Wait()
}

// walker visits a row-major index space (dims) in order, keeping the flat offsets of up to three
// operands laid out with the given strides (0 on a broadcast axis).
//
//	dims: [rank]   strides[k]: [rank], the strides of operand k
type walker struct {
	dims    []int
	strides [3][]int
	idx     []int
	off     [3]int
}

// newWalker positions a walker at linear index start of dims.
func newWalker(dims []int, strides [3][]int, start int) *walker {
	w := &walker{dims: dims, strides: strides, idx: make([]int, len(dims))}
	for a := len(dims) - 1; a >= 0; a-- {
		if dims[a] == 0 {
			return w
		}
		i := start % dims[a]
		start /= dims[a]
		w.idx[a] = i
		for k := range w.off {
			if w.strides[k] != nil {
				w.off[k] += i * w.strides[k][a]
			}
		}
	}
	return w
}

// next moves to the following index (last axis fastest).
func (w *walker) next() {
	for a := len(w.dims) - 1; a >= 0; a-- {
		w.idx[a]++
		for k := range w.off {
			if w.strides[k] != nil {
				w.off[k] += w.strides[k][a]
			}
		}
		if w.idx[a] < w.dims[a] {
			return
		}
		for k := range w.off {
			if w.strides[k] != nil {
				w.off[k] -= w.dims[a] * w.strides[k][a]
			}
		}
		w.idx[a] = 0
	}
}

// rowMajorStrides: the strides of a row-major array of shape dims.
func rowMajorStrides(dims []int) []int {
	s := make([]int, len(dims))
	stride := 1
	for a := len(dims) - 1; a >= 0; a-- {
		s[a] = stride
		stride *= dims[a]
	}
	return s
}
