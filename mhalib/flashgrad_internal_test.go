package mhalib

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
)

// The structure of FlashAttention's gradient graph (flashgrad.go), checked on node shapes: no
// node as large as the scores matrix, and the backward pass reads nothing of the forward pass
// larger than O(L·d) (it recomputes the tiles instead of keeping them). Each check is shown to
// fail on a graph that does keep the weights: plain attention, and autodiff through
// flashAttend's tiles (the gradient FlashAttention had before).

const (
	gradB, gradH, gradL, gradD = 1, 2, 128, 4
	gradBlockQ, gradBlockK     = 32, 16
)

// gradGraph builds, on a pure-Go backend graph, attention of parameters q, k, v
// [gradB, gradH, gradL, gradD] with a causal mask and a key padding mask, and the gradient of
// Σ out² with respect to q, k and v by attend; it returns the graph and the id of the last node
// of the forward pass.
func gradGraph(t *testing.T, attend func(q, k, v *Node, ms *maskSet) *Node) (*Graph, NodeId) {
	t.Helper()
	backend, err := backendtest.Get("go")
	if err != nil {
		t.Skip(err)
	}
	g := NewGraph(backend, "flashgrad")
	s := shapes.Make(dtypes.Float32, gradB, gradH, gradL, gradD)
	q, k, v := Parameter(g, "q", s), Parameter(g, "k", s), Parameter(g, "v", s)
	pad := Parameter(g, "pad", shapes.Make(dtypes.Bool, gradB, gradL))
	ms := newMaskSet(gradB, gradH, gradL, gradL, dtypes.Float32, Mask{}, "mask", MaskBlockedWhereTrue(pad), "key padding mask", CausalTopLeft, math.Inf(-1))
	loss := ReduceAllSum(Square(attend(q, k, v, ms)))
	forwardEnd := loss.Id()
	Gradient(loss, q, k, v)
	return g, forwardEnd
}

func flashGradAttend(q, k, v *Node, ms *maskSet) *Node {
	out, _ := flashAttendGrad(q, k, v, 0.5, ms, gradBlockQ, gradBlockK, false)
	return out
}

func flashAutodiffAttend(q, k, v *Node, ms *maskSet) *Node {
	out, _ := flashAttend(q, k, v, 0.5, ms, gradBlockQ, gradBlockK, false)
	return out
}

func plainAttend(q, k, v *Node, ms *maskSet) *Node {
	out, _ := attend(q, k, v, []float64{0.5}, ms, dropoutSpec{})
	return out
}

// largestNode returns the node of g with the most elements (the gradient included).
func largestNode(g *Graph) *Node {
	var big *Node
	for _, n := range g.Nodes() {
		if n.NumOutputs() == 1 && (big == nil || n.Shape().Size() > big.Shape().Size()) {
			big = n
		}
	}
	return big
}

// forwardReads returns the nodes of the forward pass (id ≤ forwardEnd; parameters and constants
// left out) that a node of the backward pass takes as input, and their elements in all.
func forwardReads(g *Graph, forwardEnd NodeId) (nodes []*Node, elems int) {
	seen := map[NodeId]bool{}
	for _, n := range g.Nodes() {
		if n.Id() <= forwardEnd {
			continue
		}
		for _, in := range n.Inputs() {
			if in.Id() > forwardEnd || in.NumOutputs() != 1 || seen[in.Id()] || in.Type() == NodeTypeParameter || in.Type() == NodeTypeConstant {
				continue
			}
			seen[in.Id()] = true
			nodes = append(nodes, in)
			elems += in.Shape().Size()
		}
	}
	return nodes, elems
}

func TestFlashGradientHoldsNoScoresMatrix(t *testing.T) {
	scores := gradB * gradH * gradL * gradL // one [B, h, L, L] matrix
	tooLarge := func(g *Graph) (*Node, bool) { n := largestNode(g); return n, n.Shape().Size() >= scores/2 }
	if n, bad := tooLarge(mustGradGraph(t, plainAttend)); !bad {
		t.Fatalf("the check cannot fail: plain attention's largest node is %s", n.Shape())
	}
	if n, bad := tooLarge(mustGradGraph(t, flashGradAttend)); bad {
		t.Errorf("FlashAttention's gradient graph has a node %s, at least half the scores [%d, %d, %d, %d]", n.Shape(), gradB, gradH, gradL, gradL)
	}
}

func TestFlashBackwardRecomputesTiles(t *testing.T) {
	// O(L·d): q, k, v, the output, the lse and the masks' rows (a few nodes of at most
	// [B, h, L, d+1]) — never the tiles of scores, O(L²) in all. (On the pure-Go backend
	// flashAttend's tiles are [B, h, BlockQ, BlockK] each, smaller than [B, h, L, d+1]: so the
	// check is on what is read in all, 51712 elements for autodiff and 5504 for the recomputing
	// backward pass when it was written.)
	limit := 8 * gradB * gradH * gradL * (gradD + 1)
	reads := func(attend func(q, k, v *Node, ms *maskSet) *Node) ([]*Node, int) {
		g, end := gradGraph(t, attend)
		return forwardReads(g, end)
	}
	if nodes, n := reads(flashAutodiffAttend); n <= limit {
		t.Fatalf("the check cannot fail: autodiff through flashAttend's tiles reads %d elements of the forward pass (%d nodes)", n, len(nodes))
	}
	if nodes, n := reads(flashGradAttend); n > limit {
		t.Errorf("the backward pass reads %d elements of the forward pass: more than O(L·d) = %d; nodes: %s", n, limit, describeNodes(nodes, 8))
	}
}

func mustGradGraph(t *testing.T, attend func(q, k, v *Node, ms *maskSet) *Node) *Graph {
	g, _ := gradGraph(t, attend)
	return g
}

// TestFlashGradForwardIsBitwise: the packing that carries the custom gradient leaves the
// output and the log-sum-exp bit for bit what flashAttend computes.
func TestFlashGradForwardIsBitwise(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		const B, h, L, d = 2, 3, 37, 8
		rng := rand.New(rand.NewPCG(29, 5))
		data := make([]float32, B*h*L*d)
		for i := range data {
			data[i] = float32(rng.NormFloat64())
		}
		x := tensors.FromFlatDataAndDimensions(data, B, h, L, d)
		res := MustExecOnceN(backend, func(x *Node) []*Node {
			q, k, v := x, MulScalar(x, 0.7), Neg(x)
			ms := newMaskSet(B, h, L, L, dtypes.Float32, Mask{}, "mask", Mask{}, "key padding mask", CausalTopLeft, math.Inf(-1))
			ms.setModern(&Window{Left: 9, Right: -1}, nil, 3, nil, dtypes.Float32)
			o1, l1 := flashAttendGrad(q, k, v, 0.3, ms, 8, 5, true)
			o2, l2 := flashAttend(q, k, v, 0.3, ms, 8, 5, true)
			return []*Node{o1, l1, o2, l2}
		}, x)
		for i, what := range []string{"output", "lse"} {
			got, want := tensors.MustCopyFlatData[float32](res[i]), tensors.MustCopyFlatData[float32](res[i+2])
			for j := range want {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("%s[%d] = %v, flashAttend gives %v", what, j, got[j], want[j])
				}
			}
		}
	})
}
