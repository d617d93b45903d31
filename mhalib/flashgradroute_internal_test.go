package mhalib

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
)

// TestFlashRoutedEqualsPacked: FlashAttention's output and the gradients of q, k and v are the
// same bit for bit whether the gradient reaches q, k and v through the packing
// (flashAttendPacked) or routed (flashgradroute.go) — the same forward and backward graphs,
// only wired differently — plain and causal, on every backend, and on the pure-Go backend also
// routed with the operands sequence-major (flashAttendRouted with seq, MultiHeadAttention's way); and flashAttendGrad routes where
// it should (the pure-Go backend's path by query blocks, no lse asked) and packs elsewhere,
// which the forward graph's Concatenate of the packing shows.
func TestFlashRoutedEqualsPacked(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(3, 17))
		const B, h, L, d = 1, 2, 96, 8
		mk := func() *tensors.Tensor {
			x := make([]float32, B*h*L*d)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			return tensors.FromFlatDataAndDimensions(x, B, h, L, d)
		}
		q, k, v := mk(), mk(), mk()
		for _, causal := range []Causal{NoCausal, CausalTopLeft} {
			const packedWay, routedWay, routedSeqWay = 0, 1, 2
			run := func(way int) []*tensors.Tensor {
				return MustExecOnceN(backend, func(q, k, v *Node) []*Node {
					ms := &maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L, causal: causal, fill: math.Inf(-1)}
					var out *Node
					switch way {
					case routedWay:
						out = flashAttendRouted(q, k, v, false, 0.3, ms, 32, 32)
					case routedSeqWay: // the operands sequence-major [B, L, h, d], as MultiHeadAttention passes them
						seq := func(x *Node) *Node { return TransposeAllDims(x, 0, 2, 1, 3) }
						out = flashAttendRouted(seq(q), seq(k), seq(v), true, 0.3, ms, 32, 32)
					default:
						out, _ = flashAttendPacked(q, k, v, 0.3, ms, 32, 32, false)
					}
					loss := ReduceAllSum(Mul(out, Cos(out))) // scalar
					return append([]*Node{out}, Gradient(loss, q, k, v)...)
				}, q, k, v)
			}
			packed := run(packedWay)
			ways := map[string]int{"routed": routedWay}
			probe := NewGraph(backend, "probe")
			if !differentiableSlices(probe) { // sequence-major: the pure-Go backend's path
				ways["routed sequence-major"] = routedSeqWay
			}
			probe.Finalize()
			for wayName, way := range ways {
				got := run(way)
				for i, name := range []string{"output", "dq", "dk", "dv"} {
					a, b := flatF32(got[i]), flatF32(packed[i])
					for j := range a {
						if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
							t.Fatalf("causal %v, %s[%d]: %s %g, packed %g (want equal bits)", causal, name, j, wayName, a[j], b[j])
						}
					}
				}
			}
		}
		// Which way flashAttendGrad goes: a Concatenate as wide as the packing is there or not.
		g := NewGraph(backend, "route")
		defer g.Finalize()
		x := Parameter(g, "x", q.Shape())
		for _, c := range []struct {
			name    string
			withLSE bool
			causal  Causal
		}{{"plain", false, NoCausal}, {"causal", false, CausalTopLeft}, {"causal with lse", true, CausalTopLeft}} {
			ms := &maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L, causal: c.causal, fill: math.Inf(-1)}
			out, _ := flashAttendGrad(x, x, x, 0.3, ms, 32, 32, c.withLSE)
			packs := packingConcats(out, B*h*L*d)
			want := c.withLSE || differentiableSlices(g)
			if (packs > 0) != want {
				t.Errorf("%s: %d Concatenates of the packing's width upstream of the output; want packing %v", c.name, packs, want)
			}
		}
	})
}

// packingConcats counts the Concatenate nodes upstream of out whose result is a multiple of
// width elements, at least 3·width (flashAttendPacked's joinFlat of o, lse, q, k, v).
func packingConcats(out *Node, width int) int {
	seen := map[NodeId]bool{}
	n := 0
	var walk func(x *Node)
	walk = func(x *Node) {
		if seen[x.Id()] {
			return
		}
		seen[x.Id()] = true
		if x.Type() == NodeTypeConcatenate && x.Shape().Size() >= 3*width && x.Shape().Size()%width == 0 {
			n++
		}
		for _, in := range x.Inputs() {
			walk(in)
		}
	}
	walk(out)
	return n
}

// TestRouteAnchorIsPlusZero: the anchor is +0 bit for bit whatever the sign of its entries'
// sum, so that o − anchor is o itself (also for o = −0) and the pure-Go backend's fastgo can hand
// o over instead of subtracting (binary.go, identityOperand). GoMLX v0.26's pure-Go Abs returns
// −0 for −0 (it negates only x < 0): as |0·t| the anchor was −0 whenever t < 0.
func TestRouteAnchorIsPlusZero(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, first := range []float32{-4, 3, float32(math.Copysign(0, -1)), float32(math.Inf(-1)), float32(math.NaN())} {
			x := tensors.FromFlatDataAndDimensions([]float32{first, 1, 2, 3}, 1, 1, 2, 2)
			got := flatF32(MustExecOnce(backend, func(x *Node) *Node { return routeAnchor(x, x, x) }, x))[0]
			if math.Float32bits(got) != 0 {
				t.Errorf("anchor of entries %g: %g (bits %#08x), want +0", first, got, math.Float32bits(got))
			}
		}
	})
}
