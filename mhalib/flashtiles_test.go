package mhalib_test

import (
	"fmt"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
)

// TestFlashTilesCoverVisiblePairs: for causal, windowed (both alignments, one or two sides) and
// unmasked attention, every (query, key) pair the rules allow lies in exactly one tile, and each
// tile holds at least one allowed pair in its key block (no key block is visited for nothing).
func TestFlashTilesCoverVisiblePairs(t *testing.T) {
	type cfg struct {
		lq, lk, bq, bk int
		causal         mhalib.Causal
		win            *mhalib.Window
	}
	w := func(l, r int, a mhalib.Alignment) *mhalib.Window { return &mhalib.Window{Left: l, Right: r, Align: a} }
	for _, c := range []cfg{
		{37, 37, 8, 4, mhalib.NoCausal, nil},
		{37, 37, 8, 4, mhalib.CausalTopLeft, nil},
		{20, 45, 8, 4, mhalib.CausalBottomRight, nil},
		{64, 64, 8, 8, mhalib.CausalTopLeft, w(9, 0, mhalib.AlignTopLeft)},
		{50, 50, 7, 5, mhalib.NoCausal, w(6, 3, mhalib.AlignTopLeft)},
		{20, 61, 4, 6, mhalib.CausalBottomRight, w(10, 0, mhalib.AlignBottomRight)},
		{33, 33, 4, 4, mhalib.NoCausal, w(-1, 2, mhalib.AlignTopLeft)},
	} {
		name := fmt.Sprintf("%+v", c)
		if c.win != nil {
			name += fmt.Sprintf(" window %+v", *c.win)
		}
		tiles, err := mhalib.FlashTiles(c.lq, c.lk, c.bq, c.bk, c.causal, c.win)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sees := func(i, j int) bool {
			p := i
			if c.causal == mhalib.CausalBottomRight {
				p = i + c.lk - c.lq
			}
			if c.causal != mhalib.NoCausal && j > p {
				return false
			}
			if c.win != nil {
				wp := i
				if c.win.Align == mhalib.AlignBottomRight {
					wp = i + c.lk - c.lq
				}
				if (c.win.Left >= 0 && j < wp-c.win.Left) || (c.win.Right >= 0 && j > wp+c.win.Right) {
					return false
				}
			}
			return true
		}
		covered := make([]int, c.lq*c.lk)
		for _, tl := range tiles {
			useful := false
			for i := tl.Row0; i < tl.Row1; i++ {
				for j := tl.Col0; j < tl.Col1; j++ {
					covered[i*c.lk+j]++
					useful = useful || sees(i, j)
				}
			}
			if !useful {
				t.Errorf("%s: tile %+v holds no visible pair", name, tl)
			}
		}
		for i := range c.lq {
			for j := range c.lk {
				if n := covered[i*c.lk+j]; sees(i, j) && n != 1 || n > 1 {
					t.Errorf("%s: pair (%d, %d) visible=%v lies in %d tiles", name, i, j, sees(i, j), n)
				}
			}
		}
	}
}

// TestFlashTilesCounts: the numbers of tiles at L 8192 (blocks 512 × 128), computed by hand: all
// 16·64 = 1024 without a mask; causal: query block b meets key blocks 0 … 4b+3, Σ (4b+4) = 544;
// causal with Window(512, 0) computes at least 4× fewer pairs than causal (each query sees 513
// keys instead of up to 8192; whole blocks of 512 rows carry some waste).
func TestFlashTilesCounts(t *testing.T) {
	count := func(causal mhalib.Causal, win *mhalib.Window) (tiles, pairs int) {
		ts, err := mhalib.FlashTiles(8192, 8192, 512, 128, causal, win)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range ts {
			pairs += (tl.Row1 - tl.Row0) * (tl.Col1 - tl.Col0)
		}
		return len(ts), pairs
	}
	if n, _ := count(mhalib.NoCausal, nil); n != 64 {
		t.Errorf("no mask: %d key-block steps, want 64 (one per key block, all 16 query blocks)", n)
	}
	if _, p := count(mhalib.NoCausal, nil); p != 8192*8192 {
		t.Errorf("no mask: %d pairs computed, want 8192²", p)
	}
	_, causal := count(mhalib.CausalTopLeft, nil)
	if want := 544 * 512 * 128; causal != want {
		t.Errorf("causal: %d pairs computed, want %d (544 tiles of 512×128)", causal, want)
	}
	_, window := count(mhalib.CausalTopLeft, &mhalib.Window{Left: 512, Align: mhalib.AlignTopLeft})
	if window*4 > causal {
		t.Errorf("window 512: %d pairs computed, causal %d: want at least 4× fewer", window, causal)
	}
	if _, err := mhalib.FlashTiles(0, 8, 4, 4, mhalib.NoCausal, nil); err == nil {
		t.Error("FlashTiles(lq 0): no error")
	}
}

// On XLA FlashAttention without BlockSizes runs in key blocks of 256 (xlaFlashBlocks), with a
// sliding window or without: the q·kᵀ tiles are [B, h, rows, 256]; BlockSizes keeps the blocks it
// is given (DefaultFlashBlockK keys). The pure-Go backend's query blocks (flashrows.go) see only
// their band of keys: no q·kᵀ tile is wider than the window plus a block of 16 rows (64/4).
func TestFlashBlocksOnXLA(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		keysPerTile := func(set, window bool) map[int]bool {
			g := NewGraph(backend, "window")
			q := Parameter(g, "q", shapes.Make(dtypes.Float32, 1, 2, 1024, 8))
			b := mhalib.FlashAttention(q, q, q).Causal(mhalib.CausalTopLeft)
			if window {
				b.Window(64, 0, mhalib.AlignTopLeft)
			}
			if set {
				b.BlockSizes(mhalib.DefaultFlashBlockQ, mhalib.DefaultFlashBlockK)
			}
			b.Done()
			cols := map[int]bool{}
			for _, node := range g.Nodes() {
				if d := node.Shape().Dimensions; node.Type() == NodeTypeDotGeneral && len(d) == 4 && d[3] != 9 { // q·kᵀ, not p·[v | 1]
					cols[d[3]] = true
				}
			}
			return cols
		}
		if backend.Name() != "xla" {
			for _, set := range []bool{false, true} {
				for cols := range keysPerTile(set, true) {
					if cols != 8 && cols > 64+16 { // 8: the products with v [B, h, rows, dv]
						t.Errorf("%s (BlockSizes set: %v): a q·kᵀ tile of %d keys, want ≤ %d (window 64 + 16 rows)", backend.Name(), set, cols, 64+16)
					}
				}
			}
			return
		}
		for _, window := range []bool{true, false} {
			want := 256
			if got := keysPerTile(false, window); !got[want] || len(got) != 1 {
				t.Errorf("%s, window %v, default blocks: q·kᵀ tiles with %v keys, want %d", backend.Name(), window, got, want)
			}
			if got := keysPerTile(true, window); !got[mhalib.DefaultFlashBlockK] || len(got) != 1 {
				t.Errorf("%s, window %v, BlockSizes set: q·kᵀ tiles with %v keys, want %d", backend.Name(), window, got, mhalib.DefaultFlashBlockK)
			}
		}
	})
}

// On XLA, FlashAttention runs as independent chains over the key/value heads (flashxla.go), as
// many as the largest divisor of Hkv up to 4, and fewer when all chains' unrolled steps would
// pass 256: every product of a tile has Hkv/chains heads — with GQA (Hq 4, Hkv 2) one key head
// and its two query heads. (TestModernOptions checks the values of the chained path on XLA: its
// window cases have 2 or 4 query heads, with GQA, sinks, ALiBi and an additive mask; the flash
// tests against the float64 reference run the causal and unmasked ones.)
func TestFlashChainsOnXLA(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		if backend.Name() != "xla" {
			t.Skip("the chains are XLA's (the pure-Go backend runs query blocks, flashrows.go)")
		}
		// productHeads returns the heads axis of every product in the graph (blockK 0: the
		// default blocks).
		productHeads := func(hq, hkv int, window bool, blockK int) map[int]bool {
			g := NewGraph(backend, "chains")
			q := Parameter(g, "q", shapes.Make(dtypes.Float32, 1, hq, 256, 8))
			k := Parameter(g, "k", shapes.Make(dtypes.Float32, 1, hkv, 256, 8))
			b := mhalib.FlashAttention(q, k, k).Causal(mhalib.CausalTopLeft).EnableGQA(hq != hkv)
			if window {
				b.Window(32, 0, mhalib.AlignTopLeft)
			}
			if blockK > 0 {
				b.BlockSizes(32, blockK)
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
			blockK    int
			wantHeads int // of every product
		}{
			{4, 4, true, 0, 1},
			{4, 2, true, 0, 1}, // GQA: products are [B, Hkv, G·rows, cols]
			{3, 3, true, 0, 1},
			{8, 8, true, 0, 2}, // at most 4 chains
			{6, 6, true, 0, 2}, // 3 chains: 4 does not divide 6
			{4, 4, false, 0, 1},
			{4, 4, false, 2, 2}, // 128 steps of 2 keys: 2 chains (256 steps in all)
			{4, 4, false, 1, 4}, // 256 steps: one chain
			{8, 2, false, 0, 1}, // GQA without a window: 2 chains of one key head
		} {
			got := productHeads(c.hq, c.hkv, c.window, c.blockK)
			if len(got) != 1 || !got[c.wantHeads] {
				t.Errorf("Hq %d, Hkv %d, window %v, blockK %d: products with heads %v, want all %d", c.hq, c.hkv, c.window, c.blockK, got, c.wantHeads)
			}
		}
	})
}
