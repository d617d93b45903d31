package mhalib

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/mhalab/mhalab/internal/backendtest"
)

// The memory the pure-Go backend needs to run a graph, from its node shapes alone.
//
// The pure-Go backend (simplego, GoMLX v0.26 backends/simplego/exec.go executeParallel), in its
// default configuration (not xla.New's "ops_sequential", which runs nodes in build order), runs a
// graph by a queue of ready nodes: it starts with the nodes that have no inputs, and a node
// joins the queue (first in, first out) once its last input is computed. A result is freed when
// its last user has run; parameters and constants are not its own. So a large node whose inputs
// are ready early — a broadcast of a small input, a slice of q — is computed early and held until
// its user runs, however late that is. goPeakLive replays that schedule with one worker and sums
// the elements alive: the peak is what the graph needs, up to the order two workers take.

// goPeakLive returns the largest number of elements alive at once when the pure-Go backend runs
// the graph of outputs, and the nodes alive at that moment, largest first.
func goPeakLive(outputs ...*Node) (peak int, live []*Node) {
	alive := map[NodeId]*Node{}
	size := 0
	goReplay(outputs, func(n *Node) {
		alive[n.Id()] = n
		size += n.Shape().Size()
		if size > peak {
			peak = size
			live = live[:0]
			for _, a := range alive {
				live = append(live, a)
			}
		}
	}, func(n *Node) {
		delete(alive, n.Id())
		size -= n.Shape().Size()
	})
	slices.SortFunc(live, func(a, b *Node) int { return b.Shape().Size() - a.Shape().Size() })
	return peak, live
}

// goPooledBytes returns the bytes the pure-Go backend's buffer pools hold after it ran the graph
// of outputs, if no garbage collection emptied them, and how many buffer sizes there were. That
// backend (simplego, buffers.go) keeps freed buffers in a pool per dtype and length, so a size
// keeps the most buffers of it that were alive at once, whatever other sizes are free.
func goPooledBytes(outputs ...*Node) (pooled int, sizes int) {
	type key struct {
		dtype dtypes.DType
		size  int
	}
	alive, most := map[key]int{}, map[key]int{}
	keyOf := func(n *Node) key { return key{n.DType(), n.Shape().Size()} }
	goReplay(outputs, func(n *Node) {
		k := keyOf(n)
		alive[k]++
		most[k] = max(most[k], alive[k])
	}, func(n *Node) { alive[keyOf(n)]-- })
	for k, c := range most {
		pooled += c * k.size * k.dtype.Size()
	}
	return pooled, len(most)
}

// goReplay replays the pure-Go backend's schedule of the graph of outputs with one worker:
// compute(n) when node n's result is made (parameters and constants are not the backend's own),
// free(n) when its last user has run (outputs are kept).
func goReplay(outputs []*Node, compute, free func(n *Node)) {
	// The nodes the outputs need, and how many times each is used.
	needed := map[NodeId]*Node{}
	var walk func(n *Node)
	walk = func(n *Node) {
		if needed[n.Id()] != nil {
			return
		}
		needed[n.Id()] = n
		for _, in := range n.Inputs() {
			walk(in)
		}
	}
	for _, o := range outputs {
		walk(o)
	}
	ids := make([]NodeId, 0, len(needed))
	for id := range needed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	uses := map[NodeId]int{}
	waiting := map[NodeId]int{}
	users := map[NodeId][]NodeId{}
	for _, id := range ids {
		n := needed[id]
		waiting[id] = len(n.Inputs())
		for _, in := range n.Inputs() {
			uses[in.Id()]++
			users[in.Id()] = append(users[in.Id()], id)
		}
	}
	for _, o := range outputs {
		uses[o.Id()]++ // outputs are kept
	}
	owned := func(n *Node) bool { return n.Type() != NodeTypeParameter && n.Type() != NodeTypeConstant }

	var queue []NodeId
	for _, id := range ids {
		if waiting[id] == 0 {
			queue = append(queue, id)
		}
	}
	alive := map[NodeId]bool{}
	used := map[NodeId]int{}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		n := needed[id]
		if owned(n) {
			alive[id] = true
			compute(n)
		}
		for _, in := range n.Inputs() {
			used[in.Id()]++
			if used[in.Id()] == uses[in.Id()] && alive[in.Id()] {
				delete(alive, in.Id())
				free(in)
			}
		}
		for _, u := range users[id] {
			waiting[u]--
			if waiting[u] == 0 {
				queue = append(queue, u)
			}
		}
	}
}

// goGradGraph builds, on a pure-Go backend graph, attention of parameters q, k, v [2, 2, L, 8]
// with masks (causal, or causal with a key padding mask), and the gradient of Σ out² with
// respect to q, k and v by attend: the loss and the gradients.
func goGradGraph(t *testing.T, L int, padded bool, attend func(q, k, v *Node, ms *maskSet) *Node) []*Node {
	t.Helper()
	backend, err := backendtest.Get("go")
	if err != nil {
		t.Skip(err)
	}
	const B, H, D = 2, 2, 8
	g := NewGraph(backend, "flashgrad")
	s := shapes.Make(dtypes.Float32, B, H, L, D)
	q, k, v := Parameter(g, "q", s), Parameter(g, "k", s), Parameter(g, "v", s)
	pad := Mask{}
	if padded {
		pad = MaskBlockedWhereTrue(Parameter(g, "pad", shapes.Make(dtypes.Bool, B, L)))
	}
	ms := newMaskSet(B, H, L, L, dtypes.Float32, Mask{}, "mask", pad, "key padding mask", CausalTopLeft, math.Inf(-1))
	loss := ReduceAllSum(Square(attend(q, k, v, ms)))
	return append([]*Node{loss}, Gradient(loss, q, k, v)...)
}

// TestFlashGradientGoMemoryIsLinear: on the pure-Go backend, the memory a gradient step of
// FlashAttention needs (goPeakLive) doubles when L doubles; plain attention's quadruples.
// Before the fix (2026-12-02) the backward pass's broadcasts of lse and D, its row slices and
// the mask tiles (and the forward pass's mask tiles), all built from inputs ready at the start,
// were computed up front: the ratio was 3.57 (causal) and 3.37 (with a key padding mask).
func TestFlashGradientGoMemoryIsLinear(t *testing.T) {
	flash := func(q, k, v *Node, ms *maskSet) *Node {
		out, _ := flashAttendGrad(q, k, v, 0.5, ms, 128, 64, false)
		return out
	}
	ratio := func(attend func(q, k, v *Node, ms *maskSet) *Node, padded bool) (float64, []*Node) {
		small, _ := goPeakLive(goGradGraph(t, 512, padded, attend)...)
		large, live := goPeakLive(goGradGraph(t, 1024, padded, attend)...)
		return float64(large) / float64(small), live
	}
	if r, _ := ratio(plainAttend, false); r < 3.5 {
		t.Fatalf("the check cannot fail: plain attention's memory grows %.2f× from L 512 to 1024", r)
	}
	for _, padded := range []bool{false, true} {
		if r, live := ratio(flash, padded); r > 2.6 {
			t.Errorf("key padding mask %v: FlashAttention's gradient needs %.2f× the memory at L 1024 as at L 512 on the pure-Go backend (O(L) would be 2); alive at the peak: %s", padded, r, describeNodes(live, 6))
		}
	}
}

// describeNodes lists the first n nodes with their type and shape.
func describeNodes(nodes []*Node, n int) string {
	var parts []string
	for _, x := range nodes[:min(n, len(nodes))] {
		parts = append(parts, fmt.Sprintf("#%d %s %s", x.Id(), x.Type(), x.Shape()))
	}
	return strings.Join(parts, ", ")
}

// TestFlashGradientGoPoolsAreLinear: on the pure-Go backend, the buffers a gradient step of
// causal FlashAttention leaves in that backend's pools (goPooledBytes: one pool per buffer size)
// double when L doubles. Before the key prefixes of flashrows.go were cut into chunks of equal
// size (2026-12-02), every query block's tile of scores had a size of its own: the pools grew
// 3.60× from L 1024 to 2048 (78 MB in 57 sizes at 2048; now 1.86×, 22 MB in 26), and go's gradient step of
// the pre-LN block at L 16384 passed 11 GiB.
func TestFlashGradientGoPoolsAreLinear(t *testing.T) {
	flash := func(q, k, v *Node, ms *maskSet) *Node {
		out, _ := flashAttendGrad(q, k, v, 0.5, ms, 128, 64, false)
		return out
	}
	for _, padded := range []bool{false, true} {
		pooled := func(L int) (int, int) { return goPooledBytes(goGradGraph(t, L, padded, flash)...) }
		small, _ := pooled(1024)
		large, sizes := pooled(2048)
		if r := float64(large) / float64(small); r > 2.6 {
			t.Errorf("key padding mask %v: the pure-Go backend's pools hold %.2f× the bytes after FlashAttention's gradient at L 2048 as at L 1024 (O(L) would be 2): %d bytes in %d buffer sizes at L 2048", padded, r, large, sizes)
		}
	}
}
