package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// FlashAttention on the pure-Go backend: query blocks, each against all the keys it sees.
//
// flashAttend (flash.go) walks the keys block by block and carries the running state of every
// query row still being computed. On XLA that state lives in fused loops; on the pure-Go
// backend every step is a handful of separate ops over a tile of [B, h, rows, BlockK] scores,
// and a profile of causal L = 4096 (fastgo's BenchmarkMHA/long_causal) showed a quarter of the
// time in the causal mask alone (Where, its broadcast iotas and bools over every tile that
// crosses the diagonal, which with query blocks larger than key blocks is every tile), and much
// of the rest in slicing rows out of the state (transposes and gathers) and in the running
// rescales.
//
// Here the loop is over query blocks of n rows instead, and each block meets all its keys at
// once — the order of FlashAttention-2's outer loop, with the inner loop done by a few large
// matrix products:
//
//	s_o = q_i·k[0:r0]ᵀ                  [B, h, n, r0]   keys before the block (causal), no mask
//	s_d = q_i·k[r0:r0+n]ᵀ + diag        [B, h, n, n]    the diagonal tile, the one masked tile
//	m   = max(rowmax s_o, rowmax s_d)    [B, h, n, 1]
//	l   = Σ exp(s_o − m) + Σ exp(s_d − m)
//	out = (exp(s_o − m)·v[0:r0] + exp(s_d − m)·v[r0:r0+n]) / l
//
// where the keys before the block are cut into chunks of equal size (flashByRowsChunk), each a
// tile s_o of its own, so that the pure-Go backend reuses the buffers of one block's tiles for
// the next. Without a causal mask there is one part, s = q_i·kᵀ over all keys. Tiles above the
// diagonal are never computed, the mask is a constant 0/−inf tile added to the diagonal tile
// only (flashrowsnodes.go), which blocks of 128 rows or more compute in two groups of rows, each
// against the keys up to its last row (flashrowsdiag.go: 3/4 of the [n, n] tile instead of all
// of it), no state is carried from block to block (each block's softmax is exact, not online),
// and memory is one row tile, O(n·Lk) per (batch, head), with n chosen so that the tile stays
// within flashByRowsTileElems. (A variant that ran a block's tiles one after another with the
// online rescaling, one tile alive at a time, kept the two cores busy less: 1.5–1.7 goroutines
// running on average in a runtime trace of fastgo's BenchmarkMHA/long_causal, against 1.6–1.9
// for this form, interleaved at load ~9.) Queries, keys and values are transposed once to
// [L, B, h, d], so that a block of rows or a prefix of keys is one contiguous Gather, which
// DotGeneral reads in that layout; each block's Gathers wait for the previous block (rowTaker),
// so that memory stays O(Lk) for the pure-Go backend, which runs every node whose inputs are
// ready. MultiHeadAttention passes its projections sequence-major, [B, L, h, d]
// (flashAttendRouted, flashByRowsIn): one transpose to [L, B, h, d] each, or a Reshape where
// B = 1, instead of SplitHeads' transpose to [B, h, L, d] and another (fastgo's BenchmarkMHA,
// MHALAB_OPPROF: the transposes of long causal 3.0 → 0.8 ms a pass). The blocks' outputs are
// joined with Concatenate, which the pure-Go backend differentiates (its gradient is Slice;
// only Slice's own gradient needs the missing Pad).
//
// A sliding window of W keys to the left (Window(W, ·), with the causal mask) cuts each block's
// keys to the band it sees, [r0 − W, r0 + n): row r0 + i sees keys r0 + i − W … r0 + i, so the
// band splits into a strip at its left end that the first rows see only in part (masked by a
// constant triangle), the keys every row sees (no mask), and the diagonal tile (the causal
// triangle, cut by the window when W < n). Query blocks are then at most W/4 rows (at least 16),
// so that the masked strip stays a small part of the band.
//
// This path is taken on backends without Pad (the pure-Go backend), for plain and causal
// attention (Lq = Lk, no extra keys), causal attention with a window to the left, with no other
// mask, ALiBi, soft-cap or sinks, and equal query and key/value heads; everything else goes
// through flashAttend's recurrence, on this backend one query block at a time (flashblocks.go).

// flashByRowsTileElems bounds the elements of one tile of scores, B·h·n·Lk (n: query rows per
// block): 16 Mi elements, 64 MiB in float32. At B1 h8 L4096 that is 512 rows; at B8 h12 L1024,
// 160. (fastgo's BenchmarkMHA, CPU time per pass on llm causal: 32 rows 1.4 s, 64–256 rows
// 0.72–1.0 s within the noise of a shared machine; 64 rows at L4096 copied the key prefixes
// too often. With the vector element-wise loops, 16 Mi against 8 Mi, 4 interleaved runs each at
// load 14–19: llm causal 557–630 ms against 671–784, long causal 324–356 against 352–361; 4 Mi
// was slower than both.)
const flashByRowsTileElems = 16 << 20

// flashByRowsFits reports whether flashByRows computes attention for the masks ms with hkv
// key/value heads (see above).
func flashByRowsFits(g *Graph, ms *maskSet, hkv int) bool {
	if differentiableSlices(g) || hkv != ms.heads {
		return false
	}
	if len(ms.allowed) > 0 || len(ms.bias) > 0 || ms.alibi != nil || ms.softCap != 0 || ms.sinks != nil {
		return false
	}
	selfCausal := ms.causal != NoCausal && ms.lq == ms.lk && ms.causalLk == ms.lk
	if ms.window != nil {
		// with Lq = Lk both alignments put query i at key i; keys to the right are causal-masked
		return selfCausal
	}
	return ms.causal == NoCausal || selfCausal
}

// flashByRowsLeft returns how many keys to the left of its own a query sees under ms's window
// (W of Window(W, ·)), or -1 when unbounded (no window, or a negative Left).
func flashByRowsLeft(ms *maskSet) int {
	if ms.window == nil || ms.window.Left < 0 {
		return -1
	}
	return ms.window.Left
}

// flashByRowsBlock returns the query rows per block: blockQ, or fewer (a multiple of 16, at
// least 16) where a tile of B·h·n·Lk scores would exceed flashByRowsTileElems.
func flashByRowsBlock(batch, heads, lk, blockQ int) int {
	n := flashByRowsTileElems / max(batch*heads*lk, 1)
	return min(blockQ, max(n/16*16, 16))
}

// flashByRowsChunkKeys is the fewest keys per chunk of a block's causal key prefix
// (flashByRowsChunk).
const flashByRowsChunkKeys = 512

// flashByRowsChunk returns the keys per chunk of a block's causal key prefix, for blocks of n
// query rows: the smallest multiple of n that is at least flashByRowsChunkKeys.
//
// The prefix of block r0 is r0 keys, a multiple of n. As one tile, [B, h, n, r0], every block's
// tile had a size of its own, and the pure-Go backend keeps the buffers it frees in pools by
// exact size (GoMLX v0.26 simplego, buffers.go: a sync.Pool per dtype and length, emptied only
// by the second garbage collection after): the process kept a buffer of every block's size,
// O(Lq·Lk) in all (go's gradient step of the pre-LN block at L 16384 grew past 11 GiB). Cut into
// chunks of this many keys, and a last one of fewer (a multiple of n), the tiles have at most
// chunk/n + 1 sizes, and each block reuses the buffers of the one before.
func flashByRowsChunk(n int) int {
	return (flashByRowsChunkKeys + n - 1) / n * n
}

// flashByRows is FlashAttention of q [B, h, Lq, dk] over k [B, h, Lk, dk], v [B, h, Lk, dv] for
// masks that flashByRowsFits accepted: output [B, h, Lq, dv] and, if withLSE, lse [B, h, Lq].
func flashByRows(qIn, k, v *Node, scale float64, ms *maskSet, blockQ int, withLSE bool) (output, lse *Node) {
	return flashByRowsIn(qIn, k, v, false, scale, ms, blockQ, withLSE)
}

// flashByRowsIn is flashByRows with q, k and v head-major ([B, h, L, d], seq false) or
// sequence-major ([B, L, h, d], seq true: the projections' layout, seqmajor.go), output and lse
// as flashByRows's. Sequence-major operands reach the layouts the blocks read — [L, B, h, d] for
// q and, with a causal mask, k and v; [B, L, h, dk] as it is for k and [B, h, L, dv] for v
// without one — in one transpose each or none (a Reshape where B = 1), instead of
// SplitHeads' transpose and another.
func flashByRowsIn(qIn, k, v *Node, seq bool, scale float64, ms *maskSet, blockQ int, withLSE bool) (output, lse *Node) {
	batch, heads, lq, lk := ms.batch, ms.heads, ms.lq, ms.lk
	causal := ms.causal != NoCausal
	n := flashByRowsBlock(batch, heads, lk, blockQ)
	left := flashByRowsLeft(ms) // keys a row sees to its left, -1: all
	if left >= 0 {
		n = min(n, max(left/4/16*16, 16))
	}

	chunk := flashByRowsChunk(n)

	q := MulScalar(qIn, scale)         // [B, h, Lq, dk] or [B, Lq, h, dk]
	rowsFirst := func(x *Node) *Node { // [L, B, h, d]
		if !seq {
			return TransposeAllDims(x, 2, 0, 1, 3)
		}
		if d := x.Shape().Dimensions; d[0] == 1 {
			return Reshape(x, d[1], 1, d[2], d[3])
		}
		return TransposeAllDims(x, 1, 0, 2, 3)
	}
	qf := rowsFirst(q) // [Lq, B, h, dk]
	var kf, vf *Node
	kBatch := []int{0, 1} // k's batch axes (B, h) without a causal mask
	if causal {
		kf, vf = rowsFirst(k), rowsFirst(v) // [Lk, B, h, dk], [Lk, B, h, dv]
	} else if seq {
		kBatch = []int{0, 2}                // k [B, Lk, h, dk] read as it is
		v = TransposeAllDims(v, 0, 2, 1, 3) // [B, h, Lk, dv]
	}

	var outs, lses []*Node
	var token *Node // one entry of the previous block's output: the blocks run one after another
	biases := bandBiases{}
	// The chunks of keys and values before the blocks, each taken once and read by every block
	// after it that sees the same chunk (with blocks of n = chunk rows, all of them): at causal
	// L 4096 the blocks took 28 chunks of k and of v for 7 distinct ones. They are all alive
	// until the last block, one more copy of k and v at most: memory stays O(Lk).
	chunks := map[[3]int]*Node{} // (0: k, 1: v; first key; keys) → [keys, B, h, d]
	for r0 := 0; r0 < lq; r0 += n {
		rows := min(n, lq-r0)
		take := newRowTaker(token).take
		takeChunk := func(which int, x *Node, c0, cols int) *Node {
			key := [3]int{which, c0, cols}
			if c, ok := chunks[key]; ok {
				return c
			}
			c := take(x, c0, cols)
			chunks[key] = c
			return c
		}
		qi := take(qf, r0, rows) // [rows, B, h, dk]
		var parts []flashByRowsPart
		var groups []flashByRowsPart // the diagonal tile by groups of rows, or nil (see flashByRowsDiagonalGroups)
		if !causal {
			s := DotGeneral(qi, []int{3}, []int{1, 2}, k, []int{3}, kBatch) // [B, h, rows, Lk]
			parts = append(parts, flashByRowsPart{s: s, v: v, vLayout: 2})
		} else {
			// keys before the block: [lo, all) seen in part (a strip), [all, r0) by every row
			lo, all := 0, 0
			if left >= 0 {
				lo = max(0, r0-left)
				all = min(r0, max(lo, r0+rows-1-left))
			}
			// each span is cut into chunks of equal size (see flashByRowsChunk)
			for _, span := range [][2]int{{lo, all}, {all, r0}} {
				for c0 := span[0]; c0 < span[1]; c0 += chunk {
					cols := min(chunk, span[1]-c0)
					ko, vo := takeChunk(0, kf, c0, cols), takeChunk(1, vf, c0, cols)      // [cols, B, h, dk], [cols, B, h, dv]
					s := DotGeneral(qi, []int{3}, []int{1, 2}, ko, []int{3}, []int{1, 2}) // [B, h, rows, cols]
					if c0 < all {
						s = biases.mask(s, r0, c0, left, ms.fill) // [B, h, rows, cols]
					}
					parts = append(parts, flashByRowsPart{s: s, v: vo, vLayout: 0})
				}
			}
			if left < 0 && flashByRowsSplits(rows) {
				groups = flashByRowsDiagonalGroups(take, qf, kf, vf, biases, r0, rows, ms.fill)
			} else {
				kd, vd := take(kf, r0, rows), take(vf, r0, rows)                      // [rows, B, h, dk], [rows, B, h, dv]
				s := DotGeneral(qi, []int{3}, []int{1, 2}, kd, []int{3}, []int{1, 2}) // [B, h, rows, rows]
				s = biases.mask(s, r0, r0, left, ms.fill)                             // [B, h, rows, rows]
				parts = append(parts, flashByRowsPart{s: s, v: vd, vLayout: 0})
			}
		}
		var m *Node // [B, h, rows, 1]
		for _, p := range parts {
			pm := ReduceAndKeep(p.s, ReduceMax, -1)
			if m == nil {
				m = pm
			} else {
				m = Max(m, pm)
			}
		}
		if groups != nil {
			gm := make([]*Node, len(groups))
			for i, p := range groups {
				gm[i] = ReduceAndKeep(p.s, ReduceMax, -1) // [B, h, rows of group i, 1]
			}
			if hm := Concatenate(gm, 2); m == nil { // [B, h, rows, 1]
				m = hm
			} else {
				m = Max(m, hm)
			}
		}
		m = StopGradient(m)
		var l, acc *Node // [B, h, rows, 1], [B, h, rows, dv]
		add := func(pl, pv *Node) {
			if l == nil {
				l, acc = pl, pv
			} else {
				l, acc = Add(l, pl), Add(acc, pv)
			}
		}
		for _, p := range parts {
			add(p.weigh(m))
		}
		if groups != nil {
			gl, gv := make([]*Node, len(groups)), make([]*Node, len(groups))
			first := 0
			for i, p := range groups {
				n := p.s.Shape().Dim(2)
				gl[i], gv[i] = p.weigh(sliceAxis(m, 2, first, n)) // [B, h, n, 1], [B, h, n, dv]
				first += n
			}
			add(Concatenate(gl, 2), Concatenate(gv, 2))
		}
		out := Div(acc, l) // [B, h, rows, dv]
		outs = append(outs, out)
		if withLSE {
			lses = append(lses, Add(m, Log(l))) // [B, h, rows, 1]
		}
		token = flashByRowsToken(out)
	}
	output = joinRows(outs) // [B, h, Lq, dv]
	// q, k and v read once more, after every block, by a +0 the output subtracts: the pure-Go
	// backend's fastgo then leaves every block's rows where they are instead of copying them
	// (its gatherview.go needs the operand read again after the last product), and hands the
	// output on without a pass for the subtraction (x − (+0) is x, −0 included). Without it
	// the last block's Gathers were copies: 1.3 of long causal's 1.75 ms of Gathers a pass.
	kr, vr := qf, qf
	if causal {
		kr, vr = kf, vf
	}
	output = Sub(output, routeAnchor(qf, kr, vr)) // [B, h, Lq, dv]
	if withLSE {
		lse = Reshape(joinRows(lses), batch, heads, lq) // [B, h, Lq]
	}
	return output, lse
}

// takeRowsAfter returns x[from:from+n] along axis 0 (a Gather of contiguous rows), made to wait
// for token, a finite scalar of the previous block, when it is not nil: the rows' indices get
// 0·token added. The pure-Go backend runs every node whose inputs are ready, so without it the
// key prefixes of all blocks could be gathered at once, O(Lk²/n) memory instead of O(Lk).
func takeRowsAfter(x *Node, from, n int, token *Node) *Node {
	idx := make([][]int32, n)
	for i := range idx {
		idx[i] = []int32{int32(from + i)}
	}
	indices := Const(x.Graph(), idx) // [n, 1]
	if token != nil {
		zero := ConvertDType(MulScalar(token, 0), dtypes.Int32) // scalar 0, after token
		indices = Add(indices, BroadcastToDims(zero, n, 1))     // [n, 1]
	}
	return Gather(x, indices) // [n, x's other axes…]
}

// flashByRowsToken is the dependency token of the next block: out's first element, replaced by 0
// when it is not finite (so that 0·token is 0), without gradient. It is one Gather of that
// element (entry0): flattening out first copied the whole block on the pure-Go backend, where
// the block's other use (the join of the outputs) keeps its buffer (fastgo's BenchmarkMHA,
// MHALAB_OPPROF: 7 Reshapes of [786432] a pass, 1.4 ms of llm causal's ~220).
func flashByRowsToken(out *Node) *Node {
	t := entry0(out) // scalar
	return StopGradient(Where(IsFinite(t), t, ZerosLike(t)))
}

// flashByRowsPart is one tile of scores s [B, h, rows, cols] with its values v: [B, h, cols, dv]
// (vLayout 2: keys on axis 2) or [cols, B, h, dv] (vLayout 0).
type flashByRowsPart struct {
	s, v    *Node
	vLayout int
}

// bandTile is the constant "may see" tile [1, 1, rows, cols] of query rows r0 … r0+rows−1 and
// keys c0 … c0+cols−1 under the causal mask and, when left ≥ 0, a window of left keys to the
// left: query p sees key j when j ≤ p and j ≥ p − left. With c0 = r0 and cols = rows and no
// window it is the causal triangle of a diagonal block.
func bandTile(g *Graph, r0, rows, c0, cols, left int) *Node {
	t := make([][]bool, rows)
	for r := range t {
		t[r] = make([]bool, cols)
		p := r0 + r
		for c := range cols {
			j := c0 + c
			t[r][c] = causalSees(p, j) && (left < 0 || j >= p-left)
		}
	}
	return Reshape(Const(g, t), 1, 1, rows, cols)
}

// maskTile sets the logits s [B, h, rows, cols] that the constant tile sees [1, 1, rows, cols]
// blocks to fill: with the fill −inf as an additive 0/−inf tile (blockAsBias, maskbias.go),
// which needs no [B, h, rows, cols] bool broadcast and Where pass (2.5% of causal L 4096's CPU
// time in fastgo's BenchmarkMHA), otherwise with Where.
func maskTile(s, sees *Node, fill float64) *Node {
	if math.IsInf(fill, -1) {
		return blockAsBias(s, sees)
	}
	dims := s.Shape().Dimensions
	return Where(BroadcastToDims(sees, dims...), s, Scalar(s.Graph(), s.DType(), fill))
}

// joinRows concatenates parts [B, h, n_i, d] along the rows: Concatenate, which every backend
// differentiates once (its gradient is Slice).
func joinRows(parts []*Node) *Node {
	if len(parts) == 1 {
		return parts[0]
	}
	return Concatenate(parts, 2)
}
