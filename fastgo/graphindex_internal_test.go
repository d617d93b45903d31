package fastgo

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"unsafe"
	"weak"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// TestGraphIndexUsers: on random graphs of element-wise ops (a node read twice by one user, by
// many users, by none), users answers from the graph's index what a scan of every node
// answers, for every node, the index being built once per graph; and the index goes when its
// graph does.
func TestGraphIndexUsers(t *testing.T) {
	if graphFieldsErr != nil {
		t.Skip(graphFieldsErr)
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 41))
	backend, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	for round := range 20 {
		b := backend.Builder("index")
		x, err := b.Parameter("x", shapes.Make(dtypes.Float32, 3), nil)
		if err != nil {
			t.Fatal(err)
		}
		ops := []backends.Op{x}
		for range 5 + rng.IntN(60) {
			a, c := ops[rng.IntN(len(ops))], ops[rng.IntN(len(ops))]
			var op backends.Op
			switch rng.IntN(3) {
			case 0:
				op, err = b.Add(a, a) // one user reading a twice
			case 1:
				op, err = b.Mul(a, c)
			default:
				op, err = b.Neg(a)
			}
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, op)
		}
		first := ops[0].(*simplego.Node)
		nodes, _ := graphOf(first)
		if len(nodes) < len(ops) {
			t.Fatalf("round %d: graph has %d nodes, %d made", round, len(nodes), len(ops))
		}
		for _, op := range ops {
			n := op.(*simplego.Node)
			got, want := users(n, nodes), scanUsers(n, nodes)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, node %d: users %d from the index, %d by a scan", round, nodeIndex(n), len(got), len(want))
			}
		}
		if indexOf(first, nodes) != indexOf(ops[len(ops)-1].(*simplego.Node), nodes) {
			t.Fatalf("round %d: two indices for one graph", round)
		}
	}
	// An index goes with its graph.
	b := backend.Builder("gone")
	x, _ := b.Parameter("x", shapes.Make(dtypes.Float32, 3), nil)
	y, _ := b.Neg(x)
	nodes, _ := graphOf(y.(*simplego.Node))
	_ = users(x.(*simplego.Node), nodes)
	key := weak.Make(*(**simplego.Builder)(unsafe.Add(unsafe.Pointer(y.(*simplego.Node)), nodeBuilderOffset)))
	if _, ok := graphIndexes.Load(key); !ok {
		t.Fatal("no index after a question")
	}
	b, x, y, nodes = nil, nil, nil, nil
	for range 20 {
		runtime.GC()
		if _, ok := graphIndexes.Load(key); !ok {
			return
		}
	}
	t.Fatal("the index of a collected graph is still kept")
}
