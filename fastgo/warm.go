package fastgo

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// Warming the next packed matrix while the helpers wait.
//
// A decoding step multiplies one token by the same packed matrices in the same order every
// step, and between two products runs element-wise ops and attention on the calling goroutine
// alone: in SmolLM2's step (models/smollm2 BenchmarkDecodeStep) ~2.5 ms of ~9, while the
// team's helper polls (team.go). The products themselves read their rows from memory, ~1.6×
// slower than from the caches (BenchmarkQuantStream against BenchmarkQuantMatVec). So each
// product records which operand followed the previous one (the order of the last step) —
// packed matrices (quant.go) and the keys and values of grouped decoding (grouprows.go) — and
// names the ones predicted next, up to warmAhead bytes; a polling helper brings their lines
// into the caches (PREFETCHT0, warmChunk bytes between two looks at the job counter), so that
// the next products find them there.
//
// Measured (2-core AMD EPYC, AVX2): BenchmarkWarmDecode, warm and cold tokens alternated, the
// layers' products 0.90× the time; SmolLM2's step, ops timed one by one (fastgo's op profiler,
// 80 steps, binaries alternated twice), the o and down products 30 → 21 µs, gate+up 52 → 46,
// qkv 21 → 18, and with the cache's rows also warmed the attention products 13.7 → 10.2 µs.
//
// The record holds addresses, not pointers: it keeps no matrix alive, and a prediction that
// is wrong (a matrix freed, another order of products) costs only the bandwidth of the lines
// asked for — a prefetch reads nothing the program sees and cannot fault. Where there is no
// prefetch instruction (prefetchAddr, prefetch_simd.go) nothing is warmed.

// warmAhead is how many bytes of the predicted next matrices are warmed after a product (at
// least the whole first one), warmChunk the bytes a helper asks for between two polls. The
// gaps between products leave time for far less than 4 MB (BenchmarkWarmDecode: ~1.8 ms of
// gaps a token, ~23 MB at one core's read rate, of the token's 96 MB); a plan cut short by
// the next job is replaced by the next product's.
var warmAhead = 4 << 20

const (
	warmChunk   = 4 << 10
	warmMaxSeen = 4096 // matrices remembered; more (another model, many sessions): start again
)

// span is a matrix's rows: n bytes at address addr.
type span struct {
	addr uintptr
	n    int
}

// warmPlan is the spans to warm after one product; next counts the bytes handed out.
type warmPlan struct {
	spans []span // shared with the record's cache: read only
	total int
	next  atomic.Int64
}

// warmRec is what the record knows of one matrix: the one that followed it last time, and the
// spans predicted after it (cached while the record has not changed since: epoch).
type warmRec struct {
	next  span
	spans []span
	total int
	epoch uint64
}

// warmer is the record of the order of products and the plan in progress.
type warmer struct {
	mu    sync.Mutex
	succ  map[uintptr]*warmRec // by the address of a matrix's rows
	prev  uintptr
	epoch uint64 // changes of succ (a new matrix or another successor), warmAhead's last value
	ahead int
	plan  atomic.Pointer[warmPlan]
	// prefetch asks for n bytes' lines at addr: prefetchAddr (the tests count what is asked)
	prefetch func(addr uintptr, n int)
}

var theWarmer = newWarmer()

func newWarmer() *warmer {
	return &warmer{succ: map[uintptr]*warmRec{}, prefetch: prefetchAddr}
}

// after records that the product of rows has finished and publishes the plan of the matrices
// predicted next. A decoding step calls it ~180 times (SmolLM2): in the steady state it finds
// the plan cached and allocates one warmPlan.
func (w *warmer) after(rows []byte) {
	if !canPrefetch || warmAhead <= 0 || len(rows) == 0 {
		return
	}
	at := uintptr(unsafe.Pointer(unsafe.SliceData(rows)))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ahead != warmAhead {
		w.ahead = warmAhead
		w.epoch++
	}
	if w.prev != 0 && w.prev != at {
		r := w.succ[w.prev]
		if r == nil {
			if len(w.succ) >= warmMaxSeen {
				clear(w.succ)
			}
			r = &warmRec{}
			w.succ[w.prev] = r
		}
		if next := (span{at, len(rows)}); r.next != next {
			r.next = next
			w.epoch++
		}
	}
	w.prev = at
	r := w.succ[at]
	if r == nil {
		w.plan.Store(nil)
		return
	}
	if r.epoch != w.epoch || r.spans == nil {
		r.spans, r.total, r.epoch = nil, 0, w.epoch // a new array: a published plan keeps its own
		for q := r; q != nil && q.next.n > 0 && q.next.addr != at && (r.total == 0 || r.total+q.next.n <= warmAhead); q = w.succ[q.next.addr] {
			r.spans = append(r.spans, q.next)
			r.total += q.next.n
			if len(r.spans) > 16 {
				break
			}
		}
	}
	if r.total == 0 {
		w.plan.Store(nil)
		return
	}
	w.plan.Store(&warmPlan{spans: r.spans, total: r.total})
}

// step asks for the next warmChunk bytes of the plan in progress and reports whether there was
// any.
func (w *warmer) step() bool {
	p := w.plan.Load()
	if p == nil {
		return false
	}
	off := int(p.next.Add(warmChunk)) - warmChunk
	if off >= p.total {
		w.plan.CompareAndSwap(p, nil)
		return false
	}
	end := off + warmChunk // [off, end) of the spans laid end to end
	for _, s := range p.spans {
		if lo, hi := max(off, 0), min(end, s.n); lo < hi {
			w.prefetch(s.addr+uintptr(lo), hi-lo)
		}
		if off, end = off-s.n, end-s.n; end <= 0 {
			break
		}
	}
	return true
}

// warmAfter records a product, on workers workers, that read x: a packed matrix's rows
// (quant.go) or a cache's keys or values (grouprows.go). With one worker there is no helper to
// warm anything.
func warmAfter[E byte | float32](x []E, workers int) {
	if workers > 1 && len(x) > 0 {
		var e E
		theWarmer.after(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), int(unsafe.Sizeof(e))*len(x)))
	}
}
