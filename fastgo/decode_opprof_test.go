package fastgo

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
)

// An op profiler for the decoding benchmarks: it wraps every executor of simplego's table and
// adds up the elapsed time of each op type and output shape (the ops run one at a time with
// "ops_sequential", so the times add up to the step's). A CPU profile charges a kernel's time to
// its function, not to the op that called it, and misses the time a core waits.

//go:linkname simplegoExecutors github.com/gomlx/gomlx/backends/simplego.nodeExecutors
var simplegoExecutors [backends.OpTypeLast]nodeExecutor

type opProfEntry struct {
	op    backends.OpType
	shape string
	n     int
	d     time.Duration
}

var opProf struct {
	sync.Mutex
	on    bool
	byKey map[string]*opProfEntry
}

var opProfOnce sync.Once

// OpProfileStart wraps the executors (once) and starts counting from zero.
func OpProfileStart() {
	opProfOnce.Do(func() {
		for i, ex := range simplegoExecutors {
			if ex == nil {
				continue
			}
			op := backends.OpType(i)
			simplegoExecutors[i] = func(b *simplego.Backend, node *simplego.Node, in []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
				if !opProf.on {
					return ex(b, node, in, owned)
				}
				t0 := time.Now()
				out, err := ex(b, node, in, owned)
				d := time.Since(t0)
				key := fmt.Sprintf("%s %s", op, nodeShape(node))
				opProf.Lock()
				e := opProf.byKey[key]
				if e == nil {
					e = &opProfEntry{op: op, shape: nodeShape(node).String()}
					opProf.byKey[key] = e
				}
				e.n++
				e.d += d
				opProf.Unlock()
				return out, err
			}
		}
	})
	opProf.Lock()
	opProf.on, opProf.byKey = true, map[string]*opProfEntry{}
	opProf.Unlock()
}

// OpProfileReport stops counting and writes the ops' time per step (steps steps), largest
// first, and the totals per op type.
func OpProfileReport(w io.Writer, steps int) {
	opProf.Lock()
	defer opProf.Unlock()
	opProf.on = false
	var es []*opProfEntry
	byOp := map[backends.OpType]*opProfEntry{}
	var total time.Duration
	for _, e := range opProf.byKey {
		es = append(es, e)
		t := byOp[e.op]
		if t == nil {
			t = &opProfEntry{op: e.op}
			byOp[e.op] = t
		}
		t.n += e.n
		t.d += e.d
		total += e.d
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(steps) }
	slices.SortFunc(es, func(a, b *opProfEntry) int { return int(b.d - a.d) })
	fmt.Fprintf(w, "ops: %.0f µs per step\n", per(total))
	for _, e := range es[:min(len(es), 40)] {
		fmt.Fprintf(w, "%9.0f µs %5d calls/step %7.1f µs/call  %s %s\n", per(e.d), e.n/steps, float64(e.d.Microseconds())/float64(e.n), e.op, e.shape)
	}
	var ts []*opProfEntry
	for _, t := range byOp {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *opProfEntry) int { return int(b.d - a.d) })
	for _, t := range ts {
		fmt.Fprintf(w, "%9.0f µs %5d calls/step  %s\n", per(t.d), t.n/steps, t.op)
	}
}
