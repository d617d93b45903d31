package mhalib_test

import (
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

// Equalities between formulations that must compute the same function: compared with each
// other directly (outputs, weights and gradients), not only each against the reference.

// assertSameResults compares two runs: outputs, weights, input and variable gradients.
func assertSameResults(t *testing.T, a, b mhaResult, tol float64) {
	t.Helper()
	ref := func(x *tensors.Tensor) *mhatest.Tensor { return fromTensor(t, x) }
	assertClose(t, "output", b.out, ref(a.out), tol)
	assertClose(t, "weights", b.weights, ref(a.weights), tol)
	if len(a.inputGrads) != len(b.inputGrads) {
		t.Fatalf("%d vs %d input gradients", len(a.inputGrads), len(b.inputGrads))
	}
	for i := range a.inputGrads {
		assertClose(t, "input gradient", b.inputGrads[i], ref(a.inputGrads[i]), tol)
	}
	for name, ga := range a.varGrads {
		gb, ok := b.varGrads[name]
		if !ok {
			t.Fatalf("variable %s has a gradient in one run only", name)
		}
		assertClose(t, "gradient of "+name, gb, ref(ga), tol)
	}
	if len(a.varGrads) != len(b.varGrads) {
		t.Fatalf("%d vs %d variable gradients", len(a.varGrads), len(b.varGrads))
	}
}

func TestUnevenHeadStrategiesAgree(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range []mhaCase{
			{name: "uneven 4+4+2", E: 10, sizes: sizes442, attn: attnShape(mhatest.BlockedWhereTrue, shape3D)},
			{name: "uneven 3+3+3+1 all options", E: 10, sizes: sizes4442, biasKV: true, zeroAttn: true,
				keyPad: padMask(mhatest.BlockedWhereTrue), causal: mhalib.CausalTopLeft, self: true, Lq: 4},
			{name: "even sizes as list", E: 8, sizes: []int{4, 4}},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := prepare(t, c)
				run := func(s mhalib.HeadStrategy) mhaResult {
					return r.execute(t, backend, true, func(b *mhalib.MHABuilder) { b.HeadStrategy(s) })
				}
				loop := run(mhalib.HeadsLoop)
				t.Run("slice=loop", func(t *testing.T) { assertSameResults(t, loop, run(mhalib.HeadsSlice), 1e-13) })
				t.Run("pad=loop", func(t *testing.T) { assertSameResults(t, loop, run(mhalib.HeadsPad), 1e-13) })
			})
		}
	})
}

func TestHeadParallelEqualsPerHeadLoop(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range []mhaCase{
			{name: "even", h: 4, attn: attnShape(mhatest.BlockedWhereTrue, shape3D), keyPad: padMask(mhatest.BlockedWhereTrue)},
			{name: "even/bias_kv/zero_attn/causal", self: true, Lq: 4, biasKV: true, zeroAttn: true, causal: mhalib.CausalTopLeft},
			{name: "uneven", E: 10, sizes: sizes4442, attn: additive(shape2D)},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := prepare(t, c)
				parallel := r.execute(t, backend, true, func(b *mhalib.MHABuilder) { b.Formulation(mhalib.HeadParallel) })
				loop := r.execute(t, backend, true, func(b *mhalib.MHABuilder) { b.Formulation(mhalib.PerHeadLoop) })
				assertSameResults(t, parallel, loop, 1e-13)
			})
		}
	})
}

func TestFusedEqualsSeparate(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		for _, c := range []mhaCase{
			{name: "self", self: true},
			{name: "cross/masks", Lq: 3, Lk: 5, attn: attn2D(mhatest.BlockedWhereTrue), keyPad: padMask(mhatest.BlockedWhereTrue)},
			{name: "cross/bias_kv/no bias", biasKV: true, noBias: true},
		} {
			t.Run(c.name, func(t *testing.T) {
				fusedRun := prepare(t, c)
				fused := fusedRun.execute(t, backend, true, nil)
				c.separate = true
				sepRun := prepare(t, c)
				sep := sepRun.execute(t, backend, true, nil)
				// Compare the separate gradients with the blocks of the fused ones.
				E := fusedRun.p.E
				w := fromTensor(t, fused.varGrads["in_proj_weight"])
				for i, name := range []string{"q_proj_weight", "k_proj_weight", "v_proj_weight"} {
					block := mhatest.FromFloat64(w.Data[i*E*E:(i+1)*E*E], E, E)
					assertClose(t, name+" vs in_proj_weight block", sep.varGrads[name], block, 1e-13)
					delete(sep.varGrads, name)
				}
				delete(fused.varGrads, "in_proj_weight")
				assertSameResults(t, fused, sep, 1e-13)
			})
		}
	})
}
