package fastgo

import (
	"testing"
	"unsafe"
)

// TestWarmPlan: the warmer predicts the matrices that followed last time, in order, up to
// warmAhead bytes (always the first), stops where the recorded order comes back to the product
// just done, and its steps ask for every byte of the plan once, in warmChunk pieces, then stop.
func TestWarmPlan(t *testing.T) {
	if !canPrefetch {
		t.Skip("no prefetch instruction in this build: nothing is warmed")
	}
	saved := warmAhead
	defer func() { warmAhead = saved }()
	type ask struct {
		addr uintptr
		n    int
	}
	var asked []ask
	buf := make([]byte, 40<<10)
	a, b, c := buf[:10000], buf[10000:10000+9000], buf[20000:20000+20000]
	at := func(s []byte) uintptr { return uintptr(unsafe.Pointer(&s[0])) }

	w := newWarmer()
	w.prefetch = func(addr uintptr, n int) { asked = append(asked, ask{addr, n}) }
	warmAhead = 1 << 20
	for _, m := range [][]byte{a, b, c, a} { // one step: a, b, c; then the next begins
		w.after(m)
	}
	p := w.plan.Load()
	if p == nil || len(p.spans) != 2 || p.spans[0] != (span{at(b), len(b)}) || p.spans[1] != (span{at(c), len(c)}) || p.total != len(b)+len(c) {
		t.Fatalf("after a: plan %+v, want b then c (the order comes back to a)", p)
	}
	steps := 0
	for w.step() {
		steps++
	}
	if want := (len(b) + len(c) + warmChunk - 1) / warmChunk; steps != want {
		t.Errorf("%d steps, want %d", steps, want)
	}
	covered := map[uintptr]int{}
	for _, q := range asked {
		covered[q.addr] += q.n
		if q.n > warmChunk || q.n <= 0 {
			t.Errorf("asked for %d bytes at once", q.n)
		}
	}
	if w.plan.Load() != nil || w.step() {
		t.Error("a finished plan is still published")
	}
	var sum int
	for _, n := range covered {
		sum += n
	}
	if sum != len(b)+len(c) || asked[0].addr != at(b) {
		t.Errorf("asked for %d bytes starting at %#x, want %d from b %#x", sum, asked[0].addr, len(b)+len(c), at(b))
	}

	warmAhead = len(b) + len(c) - 1 // c no longer fits; b is always warmed
	w.after(a)
	if p := w.plan.Load(); p == nil || len(p.spans) != 1 || p.spans[0].addr != at(b) {
		t.Errorf("budget below b+c: plan %+v, want b alone", p)
	}
	warmAhead = 1
	w.after(b)
	if p := w.plan.Load(); p == nil || len(p.spans) != 1 || p.spans[0].addr != at(c) {
		t.Errorf("budget of 1 byte: plan %+v, want c alone", p)
	}
	warmAhead = 0
	w.after(c)
	if w.plan.Load() != nil && w.plan.Load().spans[0].addr == at(a) {
		t.Error("warmAhead 0 still plans")
	}
}

// TestWarmForgets: the record holds at most warmMaxSeen matrices and then starts again, so a
// process that multiplies ever new matrices does not grow it without bound.
func TestWarmForgets(t *testing.T) {
	if !canPrefetch {
		t.Skip("no prefetch instruction in this build")
	}
	saved := warmAhead
	defer func() { warmAhead = saved }()
	warmAhead = 1 << 20
	w := newWarmer()
	buf := make([]byte, 3*warmMaxSeen)
	for i := range 3 * warmMaxSeen {
		w.after(buf[i : i+1])
	}
	if n := len(w.succ); n > warmMaxSeen || n == 0 {
		t.Errorf("%d matrices remembered, want 1 … %d", n, warmMaxSeen)
	}
}

// BenchmarkWarmAfter: the record's cost per product in the steady state of a decoding step
// (121 matrices in the same order every step).
func BenchmarkWarmAfter(b *testing.B) {
	if !canPrefetch {
		b.Skip("no prefetch instruction in this build")
	}
	w := newWarmer()
	buf := make([]byte, 121*4096)
	for b.Loop() {
		for i := range 121 {
			w.after(buf[i*4096 : (i+1)*4096])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/121, "ns/product")
}
