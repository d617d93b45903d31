package mhalib

import . "github.com/gomlx/gomlx/pkg/core/graph"

// Block sizes of a sliding window on XLA.
//
// With a window, the rows a key block meets are the rows whose window reaches it: about
// BlockK + Left rows, rounded out to whole query blocks. With the defaults (512-row query
// blocks, 128-key blocks) a window of 512 at L = 8192 gets tiles of 1024 rows × 128 keys, twice
// the window's pairs, in 64 unrolled steps. Query blocks of 128 rows and key blocks of 256 keys
// meet ~832 rows per key block: 6.8 M computed pairs per head instead of 8.4 M, in 32 steps.
//
// A rejected alternative, for the record: the whole window as one banded product (chunks of
// 128 queries against a slab of window + 128 keys, [B, h, L/128, 128, 640] scores) has 5.2 M
// pairs per head and a handful of operations, and compiled in 2 s instead of a minute, but ran
// 3–5× slower on XLA's CPU backend in the same process (A/B at L 8192, h 4): its products
// are 256 batched 128×64×640 matrix products, and XLA's CPU dot is fast on few large
// matrices, not on many small ones.

// xlaWindowBlocks returns the block sizes FlashAttention uses when none were set: those given
// (blockQ, blockK), or on XLA with a sliding window 128-row query blocks and 256-key blocks.
func xlaWindowBlocks(g *Graph, ms *maskSet, blockQ, blockK int) (int, int) {
	if ms.window == nil || g.Backend().Name() != "xla" {
		return blockQ, blockK
	}
	return 128, 256
}
