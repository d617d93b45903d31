package fastgo

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
)

// Row views: consecutive rows read where they are instead of copied.
//
// mhalib's FlashAttention on this backend (flashrows.go) takes every block of queries and every
// chunk of keys and values as a Gather of consecutive rows x[from : from+n] of an [L, B, h, d]
// operand, and hands each to matrix products only. Copied, those blocks were 13 ms of llm
// causal's ~220 (fastgo's BenchmarkMHA, MHALAB_OPPROF: 101 Gathers a pass, 3–4 copies of each
// of q, k and v, at the machine's memory bandwidth). Here such a Gather leaves its output
// buffer unwritten and records where its rows are (a view into x's buffer); each DotGeneral that
// reads the buffer reads the view instead, with the same offsets, so the products are the same
// bit for bit.
//
// The view must outlive its readers and x's buffer must not change meanwhile. In simplego's
// sequential execution (the "ops_sequential" option, which xla.New gives the pure-Go backend)
// nodes run in the graph's order, x's buffer is released after its last use by a node that
// reaches an output if the execution owns it (not a parameter's, unless donated), and only
// that last use may take it over and write it. So the Gather goes lazy only when: the backend
// runs sequentially; the Gather is no output of the graph and all its uses are DotGenerals;
// and x has a use reaching an output that comes after every one of those DotGenerals, or the
// Gather is x's last use and simplego says the execution does not own x. Otherwise it copies,
// as before. A DotGeneral that hands its work to GoMLX
// (fastgo switched off, another dtype) first writes the rows into the buffer (materialize).
//
// The record travels with the Gather's output buffer (rowViews), which simplego recycles once
// its last reader is done; that reader drops the record. So that a record left behind by an
// execution that failed half-way is never read for a recycled buffer, the lazy buffer's first
// 64 bits hold a random stamp kept in the record: whatever writes the buffer later overwrites
// it, and a record whose stamp is gone is dropped unread.

// rowView is where a lazy Gather's rows are: data is the rows in x's buffer ([]float32 or
// []float64, the Gather's output size), stamp what the Gather wrote into its output's first
// 64 bits.
type rowView struct {
	data  any
	stamp uint64
}

var (
	// rowViews: *simplego.Buffer → rowView, one per lazy Gather output alive.
	rowViews sync.Map
	// rowViewsOn switches lazy Gathers (tests, A/B); rowViewCalls counts the Gathers that went
	// lazy, rowViewReads the products that read a view, rowViewCopies the views materialized.
	rowViewsOn                                atomic.Bool
	rowViewCalls, rowViewReads, rowViewCopies atomic.Int64

	// backendModeOffset is the offset of simplego.Backend's opsExecutionType (an int);
	// backendModeErr is set when the field is not there (another GoMLX): no lazy Gathers.
	backendModeOffset uintptr
	backendModeErr    = findBackendMode()
)

func init() { rowViewsOn.Store(true) }

// opsSequential is simplego's opsExecutionSequential (GoMLX v0.26 exec.go: dynamic, parallel,
// sequential).
const opsSequential = 2

func findBackendMode() error {
	f, ok := reflect.TypeOf(simplego.Backend{}).FieldByName("opsExecutionType")
	if !ok || f.Type.Kind() != reflect.Int {
		return fmt.Errorf("fastgo: simplego.Backend has no field `opsExecutionType int` (GoMLX other than v0.26.0?)")
	}
	backendModeOffset = f.Offset
	return nil
}

// sequentialBackend reports whether backend runs every graph's nodes one at a time, in order.
func sequentialBackend(backend *simplego.Backend) bool {
	if backendModeErr != nil || backend == nil {
		return false
	}
	return *(*int)(unsafe.Add(unsafe.Pointer(backend), backendModeOffset)) == opsSequential
}

// lazyGatherOK reports whether Gather node g (consecutive rows of its operand) may leave its
// output unwritten (see above); sourceOwned is simplego's inputsOwned for the operand (true
// only at its last use, when the execution owns its buffer).
func lazyGatherOK(backend *simplego.Backend, g *simplego.Node, sourceOwned bool) bool {
	if !rowViewsOn.Load() || graphFieldsErr != nil || !sequentialBackend(backend) {
		return false
	}
	nodes, outputs := graphOf(g)
	ix := indexOf(g, nodes)
	if ix == nil || isOutput(g, outputs) {
		return false
	}
	live := ix.liveness(nodes, outputs)
	last := -1 // the last product reading g
	for _, u := range users(g, nodes) {
		if nodeOp(u) != backends.OpTypeDotGeneral {
			return false
		}
		last = max(last, nodeIndex(u))
	}
	if last < 0 {
		return false
	}
	x := nodeInputs(g)[0]
	lastUse := true // g is x's last use that simplego counts
	for _, u := range users(x, nodes) {
		i := nodeIndex(u)
		if i > last && live[i] {
			return true
		}
		if i > nodeIndex(g) && live[i] {
			lastUse = false
		}
	}
	// At its last use, an operand that the execution does not own (a parameter not donated) is
	// neither released nor taken over during the execution: its buffer outlives the readers.
	return lastUse && !sourceOwned
}

// lazyRows makes out, a Gather's output buffer of flat outFlat, a view of rows (the gathered
// rows in the operand's buffer, outFlat's length), and reports true; false (nothing done) for
// other dtypes or fewer than 64 bits.
func lazyRows(out *simplego.Buffer, outFlat, rows any) bool {
	word := stampWord(outFlat)
	if word == nil {
		return false
	}
	stamp := rand.Uint64()
	*word = stamp
	rowViews.Store(out, rowView{data: rows, stamp: stamp})
	rowViewCalls.Add(1)
	return true
}

// viewOf returns the rows that buf, a lazy Gather's output, stands for; nil when buf is no such
// buffer (or its record is stale: the stamp overwritten, the record dropped).
func viewOf(buf *simplego.Buffer, flat any) any {
	v, ok := rowViews.Load(buf)
	if !ok {
		return nil
	}
	rv := v.(rowView)
	if word := stampWord(flat); word == nil || *word != rv.stamp || flatLen(flat) != flatLen(rv.data) {
		rowViews.Delete(buf)
		return nil
	}
	return rv.data
}

// stampWord returns the first 64 bits of a float32 or float64 buffer's data, where a lazy
// Gather keeps its stamp; nil for another dtype or fewer than 64 bits.
func stampWord(flat any) *uint64 {
	switch f := flat.(type) {
	case []float32:
		if len(f) >= 2 {
			return (*uint64)(unsafe.Pointer(&f[0]))
		}
	case []float64:
		if len(f) >= 1 {
			return (*uint64)(unsafe.Pointer(&f[0]))
		}
	}
	return nil
}

// flatLen is the length of a []float32 or []float64 (0 for anything else).
func flatLen(flat any) int {
	switch f := flat.(type) {
	case []float32:
		return len(f)
	case []float64:
		return len(f)
	}
	return 0
}

// materializeViews writes the rows of every lazy buffer among inputs into the buffer itself and
// drops its record, before an executor that does not read views (GoMLX's) takes them.
func materializeViews(backend *simplego.Backend, inputs []*simplego.Buffer) {
	for _, in := range inputs {
		if in == nil {
			continue
		}
		if _, ok := rowViews.Load(in); !ok {
			continue
		}
		flat, err := backend.BufferData(in)
		if err != nil {
			continue
		}
		switch rows := viewOf(in, flat).(type) {
		case []float32:
			copy(flat.([]float32), rows)
		case []float64:
			copy(flat.([]float64), rows)
		default:
			continue
		}
		rowViews.Delete(in)
		rowViewCopies.Add(1)
	}
}

// mayBeQuant reports whether execQuantDot may take a product of inputs (its first test: two
// float32 operands of rank 3), which reads the buffers without views.
func mayBeQuant(backend *simplego.Backend, inputs []*simplego.Buffer) bool {
	for _, in := range inputs {
		s, err := backend.BufferShape(in)
		if err != nil || s.Rank() != 3 {
			return false
		}
	}
	return true
}

// dropViews drops the records of the lazy buffers among inputs that this use is the last of
// (owned: simplego releases them next).
func dropViews(inputs []*simplego.Buffer, owned []bool) {
	for i, in := range inputs {
		if in != nil && i < len(owned) && owned[i] {
			rowViews.Delete(in)
		}
	}
}

// liveness returns, per node of nodes, whether it reaches one of outputs (simplego runs only
// those, and counts only their uses), computed once per graph.
func (ix *graphIndex) liveness(nodes, outputs []*simplego.Node) []bool {
	ix.liveOnce.Do(func() {
		live := make([]bool, len(nodes))
		stack := append([]*simplego.Node(nil), outputs...)
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			i := nodeIndex(n)
			if i < 0 || i >= len(nodes) || nodes[i] != n || live[i] {
				continue
			}
			live[i] = true
			stack = append(stack, nodeInputs(n)...)
		}
		ix.live = live
	})
	return ix.live
}
