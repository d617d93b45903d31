package mhalib_test

import (
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
)

// On XLA, FlashAttention with a sliding window runs as independent chains over the key/value
// heads (flashxla.go), as many as the largest divisor of Hkv up to 4: every product of a tile
// has Hkv/chains heads — with GQA (Hq 4, Hkv 2) one key head and its two query heads. Without
// a window one chain has them all. (TestModernOptions checks the values of the chained path on
// XLA: its window cases have 2 or 4 query heads, with GQA, sinks, ALiBi and an additive mask.)
func TestFlashWindowChainsOnXLA(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		if backend.Name() != "xla" {
			t.Skip("the chains are XLA's (the pure-Go backend runs query blocks, flashrows.go)")
		}
		// productHeads returns the heads axis of every product in the graph.
		productHeads := func(hq, hkv int, window bool) map[int]bool {
			g := NewGraph(backend, "chains")
			q := Parameter(g, "q", shapes.Make(dtypes.Float32, 1, hq, 256, 8))
			k := Parameter(g, "k", shapes.Make(dtypes.Float32, 1, hkv, 256, 8))
			b := mhalib.FlashAttention(q, k, k).Causal(mhalib.CausalTopLeft).EnableGQA(hq != hkv)
			if window {
				b.Window(32, 0, mhalib.AlignTopLeft)
			}
			b.Done()
			heads := map[int]bool{}
			for _, node := range g.Nodes() {
				if d := node.Shape().Dimensions; node.Type() == NodeTypeDotGeneral && len(d) == 4 {
					heads[d[1]] = true
				}
			}
			return heads
		}
		for _, c := range []struct {
			hq, hkv   int
			window    bool
			wantHeads int // of every product
		}{
			{4, 4, true, 1},
			{4, 2, true, 1}, // GQA: products are [B, Hkv, G·rows, cols]
			{3, 3, true, 1},
			{8, 8, true, 2}, // at most 4 chains
			{6, 6, true, 2}, // 3 chains: 4 does not divide 6
			{4, 4, false, 4},
		} {
			got := productHeads(c.hq, c.hkv, c.window)
			if len(got) != 1 || !got[c.wantHeads] {
				t.Errorf("Hq %d, Hkv %d, window %v: products with heads %v, want all %d", c.hq, c.hkv, c.window, got, c.wantHeads)
			}
		}
	})
}
