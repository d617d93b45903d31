package fastgo

import (
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"github.com/gomlx/gomlx/backends/simplego"
)

// The users of every node of a graph, listed once per graph.
//
// The fusions (fuse.go, fuse_expdot.go, fuse_addmax.go) plan by asking which nodes take a node
// as an input. Answered by a scan of every node of the graph, each question cost O(nodes), and
// a graph asks about a share of its nodes on every execution: O(nodes²) a step. A gradient
// step of the pre-LN block with Flash at L 8192 on this backend (the bench's block gradient,
// measureBlockGrad) spent 38% of its CPU time in that scan, and the step's time grew faster
// than the attention's L²: L 4096 1.3 s, 8192 9.6 s, 16384 121 s. Here the first question
// about a graph lists the users of all its nodes at once (by node index, in the graph's
// order), and later ones read the list. The list is kept with a weak pointer to the graph's
// Builder as its key and dropped when the Builder is collected; it holds indices only, no
// pointer into the graph.

// graphIndex lists the users of every node of one graph: those of node i are
// at[first[i]:first[i+1]], indices into the graph's nodes.
type graphIndex struct {
	first, at []int32
	// live: whether each node reaches an output (gatherview.go), built on first use.
	live     []bool
	liveOnce sync.Once
}

// graphIndexes: weak.Pointer[simplego.Builder] → *graphIndex.
var graphIndexes sync.Map

// nodeIndex is n's index in its graph's nodes.
func nodeIndex(n *simplego.Node) int {
	return *(*int)(unsafe.Add(unsafe.Pointer(n), nodeIdxOffset))
}

// indexOf returns the index of the graph of n, whose nodes are nodes, building it on first use;
// nil when n is not nodes[nodeIndex(n)] (then users scans).
func indexOf(n *simplego.Node, nodes []*simplego.Node) *graphIndex {
	b := *(**simplego.Builder)(unsafe.Add(unsafe.Pointer(n), nodeBuilderOffset))
	i := nodeIndex(n)
	if b == nil || i < 0 || i >= len(nodes) || nodes[i] != n {
		return nil
	}
	key := weak.Make(b)
	if v, ok := graphIndexes.Load(key); ok {
		if ix := v.(*graphIndex); len(ix.first) == len(nodes)+1 {
			return ix
		}
	}
	ix := buildIndex(nodes)
	if _, loaded := graphIndexes.Swap(key, ix); !loaded {
		runtime.AddCleanup(b, func(k weak.Pointer[simplego.Builder]) { graphIndexes.Delete(k) }, key)
	}
	return ix
}

// buildIndex lists the users of every node of nodes (each user once per node it reads).
func buildIndex(nodes []*simplego.Node) *graphIndex {
	ix := &graphIndex{first: make([]int32, len(nodes)+1)}
	// Each user u of node j once: u's inputs deduplicated among themselves.
	distinct := func(u *simplego.Node, f func(j int)) {
		in := nodeInputs(u)
		for a, x := range in {
			seen := false
			for _, y := range in[:a] {
				if y == x {
					seen = true
					break
				}
			}
			if j := nodeIndex(x); !seen && j >= 0 && j < len(nodes) && nodes[j] == x {
				f(j)
			}
		}
	}
	for _, u := range nodes {
		distinct(u, func(j int) { ix.first[j+1]++ })
	}
	for i := range nodes {
		ix.first[i+1] += ix.first[i]
	}
	ix.at = make([]int32, ix.first[len(nodes)])
	next := append([]int32(nil), ix.first[:len(nodes)]...)
	for k, u := range nodes {
		distinct(u, func(j int) { ix.at[next[j]] = int32(k); next[j]++ })
	}
	return ix
}
