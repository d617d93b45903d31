package fastgo_test

import (
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/mhalab/mhalab/mhalib/dotgrad"
)

// TestOneDotGeneralGradientRule: with fastgo imported, there are two gradients of DotGeneral,
// GoMLX's own (a broadcast product of the outer size B·L·E·O) and the one that writes it as
// two DotGenerals; what Installed reports is the one the graphs get, at start, after Install
// and after Uninstall — no third rule registered by another package.
func TestOneDotGeneralGradientRule(t *testing.T) {
	backend := newBackend(t)
	const B, L, E, O = 2, 16, 8, 12
	largest := func() int {
		g := NewGraph(backend, "linear-grad")
		defer g.Finalize()
		x := Parameter(g, "x", shapes.Make(dtypes.Float32, B, L, E))
		w := Parameter(g, "w", shapes.Make(dtypes.Float32, O, E))
		_ = Gradient(ReduceAllSum(DotGeneral(x, []int{2}, nil, w, []int{1}, nil)), w)
		n := 0
		for _, node := range g.Nodes() {
			n = max(n, node.Shape().Size())
		}
		return n
	}
	outer := B * L * E * O
	check := func(step string) {
		t.Helper()
		installed := dotgrad.Installed()
		if got := largest(); (got >= outer) == installed {
			t.Errorf("%s: dotgrad.Installed() = %v, but the registered rule builds a largest node of %d (GoMLX's rule: ≥ %d)", step, installed, got, outer)
		}
	}
	check("at start")
	defer dotgrad.Uninstall()
	dotgrad.Install()
	check("installed")
	dotgrad.Uninstall()
	check("uninstalled")
	if dotgrad.Installed() {
		t.Errorf("uninstalled: Installed() = true")
	}
}
