package mhalib

import . "github.com/gomlx/gomlx/pkg/core/graph"

// Block sizes on XLA.
//
// Keys come in blocks of 256 (xlaKeyBlock), not DefaultFlashBlockK's 128: with independent chains
// (below) the graph holds a copy of the steps per chain, and half the steps compile in about half
// the time at the same speed. FlashAttention alone, causal, 4 chains, blocks of 128 and 256 keys
// executed in turn in one process (2026-12-04, medians of 14 rounds; compile and first run):
//
//	B1 h4 L8192 (512-row blocks)     399 / 352 ms, 301 / 291 ms (two runs)   11.9 → 6.6 s, 10.6 → 6.0 s
//	B1 h8 L4096 (512-row blocks)     230 / 206 ms                            5.5 → 3.1 s
//	B8 h12 L1024 (128-row blocks)    158 / 158 ms                            3.3 → 1.3 s
//
// A tile of scores is twice as wide: XLA's planned memory (memory-usage-report) of causal B1 h8
// grew from 88.0 to 103.6 MiB at L 4096 and from 383 to 432 MiB at L 16384.
//
// With a window, the rows a key block meets are the rows whose window reaches it: about
// BlockK + Left rows, rounded out to whole query blocks. With 512-row query blocks and 128-key
// blocks a window of 512 at L = 8192 gets tiles of 1024 rows × 128 keys, twice the window's
// pairs, in 64 unrolled steps. Query blocks of 128 rows and key blocks of 256 keys meet ~832 rows
// per key block: 6.8 M computed pairs per head instead of 8.4 M, in 32 steps.
//
// A rejected alternative, for the record: the whole window as one banded product (chunks of
// 128 queries against a slab of window + 128 keys, [B, h, L/128, 128, 640] scores) has 5.2 M
// pairs per head and a handful of operations, and compiled in 2 s instead of a minute, but ran
// 3–5× slower on XLA's CPU backend in the same process (A/B at L 8192, h 4): its products
// are 256 batched 128×64×640 matrix products, and XLA's CPU dot is fast on few large
// matrices, not on many small ones.

// xlaKeyBlock is the keys per block of FlashAttention on XLA when no BlockSizes were set.
const xlaKeyBlock = 256

// xlaFlashBlocks returns the block sizes FlashAttention uses when none were set: those given
// (blockQ, blockK) on other backends; on XLA key blocks of xlaKeyBlock, with blockQ, or with a
// sliding window 128-row query blocks.
func xlaFlashBlocks(g *Graph, ms *maskSet, blockQ, blockK int) (int, int) {
	switch {
	case g.Backend().Name() != "xla":
		return blockQ, blockK
	case ms.window != nil:
		return 128, xlaKeyBlock
	}
	return blockQ, xlaKeyBlock
}

// # Independent chains on XLA
//
// The unrolled steps of flashSteps form one chain: each step waits for the previous one
// (flashRows.after). XLA's CPU runtime splits each operation across its threads and waits for
// all of them before the next one, so between the products a core often waits. Independent
// chains, each over some of the key/value heads (and their query heads), give XLA operations of
// another chain to run meanwhile.
//
// A window's steps are small — at L 8192, h 4, dk 64 a step multiplies [4, 768, 64] by
// [4, 64, 256] and [4, 768, 256] by [4, 256, 65], with about ten element-wise and reduce fusions
// around them. A perf profile of that shape (2 cores, 2026-12-02) put 24% of the time in the
// thread pool and the kernel's futex and scheduler, 36% in the products and 30% in the fusions;
// on one core the choice of blocks (128×128, 64×128), masking only the partial rows for the
// maximum, p·v without the column of ones, or finishing all rows in one division at the end
// changed nothing beyond the noise. In one process, executions of both graphs interleaved
// (40 rounds, load 1.6–2.6), the median of 4 chains was 34.3–35.8 ms against 39.1–40.3 ms for
// one chain with q = k = v, 46.4–48.2 against 49.8–52.7 ms with distinct q, k, v (CPU time 4–9%
// lower); 2 chains of 2 heads each gained nothing (at load 3–6).
//
// Causal and unmasked flash gain too (2026-12-04, FlashAttention alone with its default blocks,
// graphs of 1, 2 and 4 chains executed in turn in one process, medians of 12–16 rounds):
//
//	causal  B1 h8 L4096        234 / 203 / 193 ms
//	causal  B8 h12 L1024       254 / 244 / 222 ms
//	causal  B1 h4 L8192        415 / 366 / 359 ms   (another run, 1 and 4 chains: 386 / 344)
//	none    B1 h8 L4096        348 / – / 305 ms
//	none    B8 h12 L1024       270 / – / 250 ms
//
// Memory is unchanged (each chain's tiles have its share of the heads; XLA's planned memory of
// the causal B1 h8 L4096 graph 97.5 MiB with one chain, 88.0 MiB with four); the graph has a
// copy of the steps per chain, so compiling took longer (with 128-key blocks 4.2 → 6.8 s at
// B1 h8 L4096, 8.3 → 15.5 s at L 8192: hence xlaKeyBlock above) and needs more memory while it
// runs. xlaMaxChainSteps bounds the steps of all chains together: a long sequence gets fewer
// chains (with 256-key blocks 4 up to L 16384, 2 at L 32768, one from L 65536 on).

// xlaMaxChains bounds the number of chains.
const xlaMaxChains = 4

// xlaMaxChainSteps bounds the unrolled steps of all chains together (what compiling costs).
const xlaMaxChainSteps = 256

// xlaFlashChains returns the number of independent chains FlashAttention runs on XLA for hkv
// key/value heads and steps key blocks per chain: the largest divisor of hkv up to xlaMaxChains
// and xlaMaxChainSteps/steps (at least 1); 1 on other backends.
func xlaFlashChains(g *Graph, hkv, steps int) int {
	if g.Backend().Name() != "xla" {
		return 1
	}
	return flashChainCount(hkv, steps)
}

// flashChainCount is xlaFlashChains on XLA: the largest divisor of hkv that is at most
// xlaMaxChains and xlaMaxChainSteps/steps, or 1.
func flashChainCount(hkv, steps int) int {
	n := max(1, min(hkv, xlaMaxChains, xlaMaxChainSteps/max(1, steps)))
	for hkv%n != 0 {
		n--
	}
	return n
}

// flashChains is flashSteps run as n independent chains, each over consecutive key/value heads
// and the query heads that use them (with GQA, query head i uses key head i/(Hq/Hkv)), joined
// on the heads axis: q [B, Hq, Lq, dk], k [B, Hkv, Lk, dk], v [B, Hkv, Lk, dv] with Hkv a
// multiple of n; output [B, Hq, Lq, dv] and, if withLSE, lse [B, Hq, Lq].
func flashChains(q, k, v *Node, scale float64, ms *maskSet, blockQ, blockK int, withLSE bool, n int) (output, lse *Node) {
	gq, gkv := q.Shape().Dim(1)/n, k.Shape().Dim(1)/n
	var outs, lses []*Node
	for i := range n {
		o, l := flashSteps(sliceAxis(q, 1, i*gq, gq), sliceAxis(k, 1, i*gkv, gkv), sliceAxis(v, 1, i*gkv, gkv),
			scale, ms.forHeads(i*gq, gq), blockQ, blockK, withLSE) // [B, Hq/n, Lq, dv], [B, Hq/n, Lq]
		outs, lses = append(outs, o), append(lses, l)
	}
	output = concatAxis(outs, 1) // [B, Hq, Lq, dv]
	if withLSE {
		lse = concatAxis(lses, 1) // [B, Hq, Lq]
	}
	return output, lse
}

// # The causal mask on XLA's CPU backend
//
// With a causal mask every step's tile of rows [first, end) starts with the query block that
// crosses the diagonal, so the mask applies to the whole tile. XLA's CPU backend cannot fuse
// the mask (a select on an iota comparison) into the row maximum (a reduce, which it wraps in a
// fusion of its own): it writes the masked tile [B, h, rows, cols] to memory for the maximum and
// reads it again, one more write and read of the largest tensor per step than without a mask.
// Only the first rows of the tile see part of the key block; every later row sees all of it.
// flashTileMax takes the maximum of those later rows from the scores as they are (read straight
// from the product) and masks only the first rows, a small slice. The exponentials still read
// the scores and apply the mask inside their own loop, as before.

// flashTileMax returns the row maxima [B, h, rows, 1] of a tile of scores: masked, the tile
// with ms applied (rows from row0, keys from c0), and raw, the same tile before the masks.
func flashTileMax(raw, masked *Node, ms *maskSet, row0, c0 int) *Node {
	rows, cols := raw.Shape().Dim(2), raw.Shape().Dim(3)
	onlyCausal := ms.causal != NoCausal && len(ms.allowed) == 0 && len(ms.bias) == 0 &&
		ms.window == nil && ms.alibi == nil && ms.softCap == 0
	if !onlyCausal || !differentiableSlices(raw.Graph()) || masked == raw {
		return ReduceAndKeep(masked, ReduceMax, -1)
	}
	n := causalPartialRows(ms, row0, rows, c0, cols)
	if n > rows/2 {
		return ReduceAndKeep(masked, ReduceMax, -1) // most rows are masked: mask them all
	}
	whole := ReduceAndKeep(raw, ReduceMax, -1) // [B, h, rows, 1]; exact for rows ≥ n
	if n == 0 {
		return whole
	}
	first := ReduceAndKeep(ms.apply(sliceAxis(raw, 2, 0, n), row0, c0), ReduceMax, -1) // [B, h, n, 1]
	return concatAxis([]*Node{first, sliceAxis(whole, 2, n, rows-n)}, 2)               // [B, h, rows, 1]
}

// causalPartialRows returns how many leading rows of the tile rows [row0, row0+rows) × keys
// [c0, c0+cols) do not see every key of it under ms's causal mask (keys from ms.causalLk on
// are seen by every row). Rows see more keys as they go down, so those rows come first.
func causalPartialRows(ms *maskSet, row0, rows, c0, cols int) int {
	last := min(c0+cols, ms.causalLk) - 1 // the last causally masked key of the tile
	if last < c0 {
		return 0 // every key of the tile is visible to all
	}
	n := 0
	for n < rows && !causalSees(ms.queryPosition(row0+n), last) {
		n++
	}
	return n
}

// flashQueryRows returns the query rows [st.first, st.first+rows) of qs [B, Hq, Lq, dk] for
// the next step, made to depend on the previous step (flashRows.after: otherwise XLA would slice
// every step's rows up front, O(L²/BlockQ·dk) memory with a causal mask). prev is the previous
// step's rows: where slices can be differentiated (XLA), it is reused while the rows stay the
// same (a causal query block meets BlockQ/BlockK key blocks), and all Lq rows are q itself,
// without a copy per step. Elsewhere every step slices anew.
func flashQueryRows(prev *Node, qs *axisSlicer, st *flashRows, rows, lq int) *Node {
	if !differentiableSlices(st.graph) {
		return st.after(qs.slice(st.first, rows))
	}
	if rows == lq {
		return qs.slice(0, lq)
	}
	if prev != nil && prev.Shape().Dim(2) == rows && st.qFirst == st.first {
		return prev
	}
	st.qFirst = st.first
	return st.after(qs.slice(st.first, rows))
}

// # XLA's block of temporaries
//
// XLA's CPU client allocates one block for all of an execution's intermediate tensors and frees
// it when the execution ends; glibc keeps a freed block for reuse only below its mmap threshold
// (32 MiB at most by itself; 64 MiB in the per-thread arenas XLA's workers allocate from), so a
// larger one is mapped, faulted in and zeroed again by every execution (xla/hugepages.go). Its size
// is the peak of XLA's buffer assignment (XLA_FLAGS=--xla_dump_to=DIR, the file
// *-memory-usage-report.txt). MultiHeadAttention with Flash and a causal mask, as mhalab bench
// runs it (2026-12-02, xla-cpu-pjrt 0.0.1):
//
//	B1 L4096 E512 h8 (blocks 512×128)    108.8 MiB, 89.5 MiB with finished rows written in place
//	B8 L1024 E768 h12 (blocks 128×128)   251.8 MiB, 234.7 MiB
//
// XLA fused each query block's last update α·acc + p·v, the division by l and the concatenation
// of all blocks' outputs into one loop at the end, so every finished block's accumulator and last
// p·v, [B, h, rows, dv+1] each over all the rows still computed then, stayed alive to the end:
// 67 MiB of the long case's peak. flashSteps now writes each block's output (and lse) into a
// [B, h, Lq, dv] tensor with DynamicUpdateSlice when the block finishes (flashRows.inPlace), which
// XLA does in place. The peak then comes at the first steps: the fused q/k/v projection
// [4096, 1536] (24 MiB, read by every step's slices), a tile of scores and its exponentials at
// 3584 rows (2 × 14 MiB), the previous accumulator and the new p·v (2 × 8.5 MiB: XLA does not
// materialise acc, the next update reads both), the output (8 MiB) and the query rows (7 MiB).
//
// Below 32 MiB is out of reach for these shapes: the projection alone is 24 MiB (72 MiB at B8
// L1024 E768), the accumulator of 4096 rows 8.5 MiB and one tile of 128 keys over 4096 rows
// 16 MiB. Tried and not kept: the whole state (m and acc of all Lq rows) updated in place with
// DynamicUpdateSlice each step gave 86.6 and 200.1 MiB, but XLA's copy insertion copied both
// buffers every step (96 copies in the long graph) and it was not faster; taking the token from
// p·v instead let three p·v run ahead (96.2 MiB), and start indices made dynamic (from the token,
// so that XLA keeps DynamicSlice) 369 MiB. --xla_cpu_enable_concurrency_optimized_scheduler=false
// changes nothing (108.1 MiB).
//
// What the block costs: perf record -e cpu-clock over the timed executions of the long case (with
// glibc.malloc.hugetlb=1, as mhalab bench runs) put the kernel's clear_page_erms at 4.8–13% of the
// CPU time in two runs of the same graph at load ~3. GLIBC_TUNABLES=glibc.malloc.arena_max=1:
// glibc.malloc.mmap_max=0 makes every thread allocate from the main heap, which keeps the block:
// 0 minor faults in the median execution. It did not pay: three alternating processes each gave
// 402, 393 and 389 ms of CPU time per execution against 363, 378 and 366 without it (load 4.2–4.9),
// with _int_malloc at 5.5–7% of the profile (one arena for all threads) instead of 0.5%, and
// clear_page_erms still at 8.7–23% (the executions that did fault, up to 83 huge pages each).
// Concatenated against in place in one process (executions alternated, 20–30 rounds, the last
// run as TestFlashFinishInPlaceAB does it, rotating which goes first; load 2.2–4.8), CPU time
// median per execution: long causal 353 → 361, 408 → 377, 367 → 361, 353 → 356, 366 → 352 ms
// (within the noise: the block is 18% smaller but still mapped afresh each time; with huge pages
// the median execution faulted 258 times concatenated, 417 in place); B8 L1024 E768 h12
// 546 → 528, 706 → 527, 589 → 513, 546 → 506 ms.
