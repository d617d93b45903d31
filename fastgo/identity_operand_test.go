package fastgo_test

import (
	"math"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/fastgo"
)

// TestIdentityOperandHandsOver checks x − (+0), x + (−0), (−0) + x, x·1, 1·x and x/1, where x's
// buffer is handed over (x = a + a, an intermediate) and the scalar is known only when the graph
// runs: the output is x as it is, without a pass over it (IdentityOperandCalls counts them), bit
// for bit what GoMLX's executors give, −0, infinities and a quiet NaN included. The
// near-identities that are not one for every x (x − (−0) and x + (+0) turn −0 into +0; 0 − x,
// 1/x) are computed, and equal GoMLX's too.
func TestIdentityOperandHandsOver(t *testing.T) {
	backend := newBackend(t)
	negZero := float32(math.Copysign(0, -1))
	data := []float32{1.5, -2.25, 0, negZero, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e-39, -7, 1e30}
	a := tensors.FromFlatDataAndDimensions(data, 2, len(data)/2)
	for _, c := range []struct {
		name     string
		scalar   float32
		build    func(x, s *Node) *Node
		identity bool
	}{
		{"x-(+0)", 0, Sub, true},
		{"x+(-0)", negZero, Add, true},
		{"(-0)+x", negZero, func(x, s *Node) *Node { return Add(s, x) }, true},
		{"x*1", 1, Mul, true},
		{"1*x", 1, func(x, s *Node) *Node { return Mul(s, x) }, true},
		{"x/1", 1, Div, true},
		{"x-(-0)", negZero, Sub, false},
		{"x+(+0)", 0, Add, false},
		{"0-x", 0, func(x, s *Node) *Node { return Sub(s, x) }, false},
		{"1/x", 1, func(x, s *Node) *Node { return Div(s, x) }, false},
		{"x*(-1)", -1, Mul, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(fast bool) ([]float32, int64) {
				prev := fastgo.SetEnabled(fast)
				defer fastgo.SetEnabled(prev)
				exec := MustNewExec(backend, func(a, s *Node) *Node {
					return c.build(Add(a, a), s) // [2, 5]; Add(a, a) handed over to the op
				})
				defer exec.Finalize()
				before := fastgo.IdentityOperandCalls.Load()
				out := exec.MustExec(a, c.scalar)[0]
				return tensors.MustCopyFlatData[float32](out), fastgo.IdentityOperandCalls.Load() - before
			}
			got, calls := run(true)
			want, _ := run(false)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Errorf("element %d (x = 2·%v): fastgo %v (%#08x), GoMLX %v (%#08x)", i, data[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
			if wantCalls := map[bool]int64{true: 1, false: 0}[c.identity]; calls != wantCalls {
				t.Errorf("%d identity hand-overs, want %d", calls, wantCalls)
			}
		})
	}
}

// TestIdentityOperandNotOwned checks that x − (+0) with x a parameter (a buffer the op may not
// take over) writes a new output equal to x and leaves x intact.
func TestIdentityOperandNotOwned(t *testing.T) {
	backend := newBackend(t)
	x := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4}, 2, 2)
	exec := MustNewExec(backend, func(x, s *Node) (*Node, *Node) { return Sub(x, s), Add(x, x) })
	defer exec.Finalize()
	before := fastgo.IdentityOperandCalls.Load()
	outs := exec.MustExec(x, float32(0))
	if got := tensors.MustCopyFlatData[float32](outs[0]); got[0] != 1 || got[3] != 4 {
		t.Errorf("x − 0 = %v, want [1 2 3 4]", got)
	}
	if got := tensors.MustCopyFlatData[float32](outs[1]); got[0] != 2 || got[3] != 8 {
		t.Errorf("x + x = %v after x − 0, want [2 4 6 8]", got)
	}
	if n := fastgo.IdentityOperandCalls.Load() - before; n != 0 {
		t.Errorf("%d identity hand-overs of a buffer the op does not own, want 0", n)
	}
}
