package mhalib

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Masks decide which keys each query may attend to. Two libraries, two opposite boolean
// conventions — so in mhalib the convention is in the constructor's name:
//
//   - MaskBlockedWhereTrue: nn.MultiheadAttention's bool attn_mask / key_padding_mask, true = not allowed.
//   - MaskAttendWhereTrue: F.scaled_dot_product_attention's bool attn_mask, true = attend.
//   - MaskAdditive: a float mask added to the logits (0 = keep, −inf = block), as both accept.
//
// Accepted shapes for an attention mask: [Lq, Lk], [B·h, Lq, Lk] (PyTorch's 3-D form, head
// index b·h + i), [B, h, Lq, Lk], and [B, 1, Lq, Lk] / [1, h, Lq, Lk] / [1, 1, Lq, Lk].
// A key padding mask is [B, Lk], built with the same constructors.
//
// Blocked logits are replaced by the fill value (default −inf; −1e9 selectable). A query row whose
// every key is blocked by −inf yields zero weights, zero output and zero gradient — never NaN (the
// behaviour of PyTorch ≥ 2.5 scaled_dot_product_attention; older nn.MultiheadAttention gives NaN).
// With a finite fill such as −1e9 such a row gets uniform weights, as masked_fill(−1e9) code does.

// maskKind is the convention of a Mask.
type maskKind int

const (
	maskNone maskKind = iota
	maskBlockedWhereTrue
	maskAttendWhereTrue
	maskAdditive
)

// Mask is an attention or key padding mask together with its convention.
// The zero value means "no mask".
type Mask struct {
	node *Node
	kind maskKind
}

// MaskBlockedWhereTrue wraps a bool mask where true means "may NOT attend"
// (nn.MultiheadAttention's attn_mask and key_padding_mask convention).
func MaskBlockedWhereTrue(m *Node) Mask { return Mask{node: m, kind: maskBlockedWhereTrue} }

// MaskAttendWhereTrue wraps a bool mask where true means "may attend"
// (F.scaled_dot_product_attention's attn_mask convention).
func MaskAttendWhereTrue(m *Node) Mask { return Mask{node: m, kind: maskAttendWhereTrue} }

// MaskAdditive wraps a float mask added to the scaled logits (0 keeps, −inf blocks);
// its dtype must be the query's.
func MaskAdditive(m *Node) Mask { return Mask{node: m, kind: maskAdditive} }

// IsZero reports whether m is the zero Mask (no mask).
func (m Mask) IsZero() bool { return m.node == nil }

// Node returns the mask's tensor (nil for the zero Mask).
func (m Mask) Node() *Node { return m.node }

// String names the convention.
func (m Mask) String() string {
	switch m.kind {
	case maskBlockedWhereTrue:
		return "MaskBlockedWhereTrue" + m.node.Shape().String()
	case maskAttendWhereTrue:
		return "MaskAttendWhereTrue" + m.node.Shape().String()
	case maskAdditive:
		return "MaskAdditive" + m.node.Shape().String()
	}
	return "NoMask"
}

// allowed returns the mask as bool "may attend" (same shape), or nil for an additive mask.
func (m Mask) allowed() *Node {
	switch m.kind {
	case maskBlockedWhereTrue:
		return LogicalNot(m.node)
	case maskAttendWhereTrue:
		return m.node
	}
	return nil
}

// Causal selects a causal mask.
type Causal int

const (
	// NoCausal: no causal mask (the default).
	NoCausal Causal = iota
	// CausalTopLeft: query i sees keys j ≤ i — SDPA's is_causal, aligned at the top-left corner.
	CausalTopLeft
	// CausalBottomRight: query i sees keys j ≤ i + Lk − Lq — aligned at the bottom-right corner,
	// as when decoding Lq new tokens after Lk − Lq cached ones.
	CausalBottomRight
)

// String names the causal variant.
func (c Causal) String() string {
	switch c {
	case NoCausal:
		return "NoCausal"
	case CausalTopLeft:
		return "CausalTopLeft"
	case CausalBottomRight:
		return "CausalBottomRight"
	}
	return "Causal(?)"
}

// FillNegInf returns the default fill, −inf: blocked logits become −inf, PyTorch's choice.
// (A function, as math.Inf: Go has no infinite constant.)
func FillNegInf() float64 { return math.Inf(-1) }

// FillMinus1e9 is the classic masked_fill(mask == 0, −1e9) of many tutorials.
const FillMinus1e9 = -1e9

// maskSet gathers everything that decides which (query, key) pairs interact, normalised to rank 4
// so that any block of rows and columns can be produced: the whole [Lq, Lk] matrix for plain
// attention, or a tile for block-wise (flash) attention and KV-cache decoding.
type maskSet struct {
	batch, heads, lq, lk int
	allowed              []*Node // bool "may attend", each [B|1, h|1, Lq|1, Lk]
	bias                 []*Node // float, added to the logits, each [B|1, h|1, Lq|1, Lk]
	causal               Causal
	causalLk             int // keys at index ≥ causalLk (bias_kv, zero_attn columns) are never causally blocked
	fill                 float64

	// Options of current LLMs (AttentionOptions): applied to every tile of scaled logits, in
	// this order: soft-cap, ALiBi, the additive masks, then the window with the other blocks.
	window  *Window
	alibi   []float64 // one slope per head
	softCap float64
	sinks   *Node // [heads], used by the softmax (sdpa.go, flash.go)

	// token, when not nil, is a finite scalar of FlashAttention's previous tile that this
	// tile's masks wait for (wait): the pure-Go backend runs every node as soon as its inputs
	// are ready, so the tiles of masks built from constants (the causal triangle, the window,
	// ALiBi) or from the masks' inputs would otherwise all be computed up front and held until
	// their tile runs, O(Lq·Lk) memory (flashgrad.go).
	token *Node
}

// setModern validates and stores the window, ALiBi slopes, soft-cap and sinks.
func (ms *maskSet) setModern(window *Window, alibi []float64, softCap float64, sinks *Node, dtype dtypes.DType) {
	if window != nil && window.Align != AlignTopLeft && window.Align != AlignBottomRight {
		panicArg("Window", "unknown alignment %d", int(window.Align))
	}
	if alibi != nil && len(alibi) != ms.heads {
		panicArg("ALiBi", "%d slopes for %d query heads: want one per head (ALiBiSlopes(%d))", len(alibi), ms.heads, ms.heads)
	}
	if softCap < 0 || math.IsNaN(softCap) || math.IsInf(softCap, 0) {
		panicArg("SoftCap", "%g: want a positive cap (0: none)", softCap)
	}
	if sinks != nil {
		if sinks.Rank() != 1 || sinks.Shape().Dim(0) != ms.heads || sinks.DType() != dtype {
			panicArg("Sinks", "shape %s: want [%d] (one logit per query head) in the query's dtype %s", sinks.Shape(), ms.heads, dtype)
		}
	}
	ms.window, ms.alibi, ms.softCap, ms.sinks = window, alibi, softCap, sinks
}

// newMaskSet validates and normalises the masks for attention of q over k, with
// q [B, h, Lq, dk] and k [B, h, Lk, dk] described by their dimensions. names gives the
// argument names used in error messages ("mask", "key padding mask").
func newMaskSet(batch, heads, lq, lk int, dtype dtypes.DType, attn Mask, attnName string,
	keyPad Mask, keyPadName string, causal Causal, fill float64) *maskSet {
	ms := &maskSet{batch: batch, heads: heads, lq: lq, lk: lk, causal: causal, causalLk: lk, fill: fill}
	if causal < NoCausal || causal > CausalBottomRight {
		panicArg("Causal", "unknown value %d", int(causal))
	}
	if !attn.IsZero() {
		checkMaskDType(attn, attnName, dtype)
		m := normaliseAttnMask(attn.node, attnName, batch, heads, lq, lk) // [B|1, h|1, Lq, Lk]
		ms.add(Mask{node: m, kind: attn.kind})
	}
	if !keyPad.IsZero() {
		checkMaskDType(keyPad, keyPadName, dtype)
		dims := keyPad.node.Shape().Dimensions
		if len(dims) != 2 || dims[0] != batch || dims[1] != lk {
			panicArg(keyPadName, "shape %s: want [batch=%d, Lk=%d]", keyPad.node.Shape(), batch, lk)
		}
		m := Reshape(keyPad.node, batch, 1, 1, lk) // [B, 1, 1, Lk]
		ms.add(Mask{node: m, kind: keyPad.kind})
	}
	return ms
}

func (ms *maskSet) add(m Mask) {
	if a := m.allowed(); a != nil {
		ms.allowed = append(ms.allowed, a)
	} else {
		ms.bias = append(ms.bias, m.node)
	}
}

func checkMaskDType(m Mask, name string, dtype dtypes.DType) {
	switch m.kind {
	case maskAdditive:
		if m.node.DType() != dtype {
			panicArg(name, "shape %s: an additive mask must have the query's dtype %s", m.node.Shape(), dtype)
		}
	default:
		if m.node.DType() != dtypes.Bool {
			panicArg(name, "shape %s: %s needs a Bool mask (use MaskAdditive for float masks)", m.node.Shape(), m)
		}
	}
}

// normaliseAttnMask reshapes an attention mask to [B|1, h|1, Lq, Lk].
func normaliseAttnMask(m *Node, name string, batch, heads, lq, lk int) *Node {
	dims := m.Shape().Dimensions
	want := "want [Lq, Lk], [B·h, Lq, Lk], [B, h, Lq, Lk] or [B|1, h|1, Lq, Lk]"
	bad := func() {
		panicArg(name, "shape %s does not fit B=%d, h=%d, Lq=%d, Lk=%d: %s", m.Shape(), batch, heads, lq, lk, want)
	}
	switch len(dims) {
	case 2:
		if dims[0] != lq || dims[1] != lk {
			bad()
		}
		return Reshape(m, 1, 1, lq, lk) // [1, 1, Lq, Lk]
	case 3:
		if dims[0] != batch*heads || dims[1] != lq || dims[2] != lk {
			bad()
		}
		return Reshape(m, batch, heads, lq, lk) // [B, h, Lq, Lk]
	case 4:
		if (dims[0] != batch && dims[0] != 1) || (dims[1] != heads && dims[1] != 1) || dims[2] != lq || dims[3] != lk {
			bad()
		}
		return m
	}
	bad()
	return nil
}

// forHeads returns the mask set restricted to heads [first, first+count).
func (ms *maskSet) forHeads(first, count int) *maskSet {
	if first == 0 && count == ms.heads {
		return ms
	}
	out := *ms
	out.heads = count
	pick := func(list []*Node) []*Node {
		res := make([]*Node, len(list))
		for i, m := range list {
			if m.Shape().Dimensions[1] == 1 {
				res[i] = m
			} else {
				res[i] = sliceAxis(m, 1, first, count) // [B|1, count, Lq|1, Lk]
			}
		}
		return res
	}
	out.allowed = pick(ms.allowed)
	out.bias = pick(ms.bias)
	if ms.alibi != nil {
		out.alibi = ms.alibi[first : first+count]
	}
	if ms.sinks != nil {
		out.sinks = sliceAxis(ms.sinks, 0, first, count)
	}
	return &out
}

// extendKeys returns the mask set for keys extended by n columns that every query may attend
// to (add_bias_kv, add_zero_attn), as PyTorch's F.pad(mask, (0, n)) does: bool masks get n
// "allowed" columns, additive masks n zero columns, and the causal mask leaves them visible.
func (ms *maskSet) extendKeys(n int) *maskSet {
	if n == 0 {
		return ms
	}
	out := *ms
	out.lk = ms.lk + n
	pad := func(list []*Node, value func(m *Node, dims []int) *Node) []*Node {
		res := make([]*Node, len(list))
		for i, m := range list {
			dims := m.Shape().Clone().Dimensions
			dims[3] = n
			res[i] = concatAxis([]*Node{m, value(m, dims)}, 3) // [B|1, h|1, Lq|1, Lk+n]
		}
		return res
	}
	out.allowed = pad(ms.allowed, func(m *Node, dims []int) *Node {
		return BroadcastToDims(Const(m.Graph(), true), dims...)
	})
	out.bias = pad(ms.bias, func(m *Node, dims []int) *Node {
		return Zeros(m.Graph(), shapes.Make(m.DType(), dims...))
	})
	return &out
}

// block returns rows [rowOff, rowOff+rows) and columns [colOff, colOff+cols) of a normalised mask
// [B|1, h|1, Lq|1, Lk] — the tile of a block-wise computation.
func (ms *maskSet) block(m *Node, rowOff, rows, colOff, cols int) *Node {
	if m.Shape().Dimensions[2] != 1 {
		m = sliceAxis(m, 2, rowOff, rows)
	} else {
		// A mask of keys only ([B|1, h|1, 1, Lk], a key padding mask) waits before it is cut:
		// on the pure-Go backend the cut transposes all of it, and every tile's transpose would
		// otherwise be made up front and held (O(Lq·Lk²/BlockQ·BlockK) in all).
		return sliceAxis(ms.wait(m), 3, colOff, cols)
	}
	return ms.wait(sliceAxis(m, 3, colOff, cols))
}

// wait returns x made to wait for ms.token (x + 0·token, or x ∧ true for bools), the same
// values; x itself when there is no token.
func (ms *maskSet) wait(x *Node) *Node {
	if ms.token == nil {
		return x
	}
	zero := MulScalar(ms.token, 0) // scalar 0: the token is finite
	if x.DType() == dtypes.Bool {
		return LogicalAnd(x, BroadcastToDims(Equal(zero, zero), x.Shape().Dimensions...))
	}
	return Add(x, BroadcastToDims(ConvertDType(zero, x.DType()), x.Shape().Dimensions...))
}

// tilePositions returns the positions of a tile's pairs, i of query row rowOff+r (plus shift)
// and j of key colOff+c, both int32 [1, 1, rows, cols]: computed on a column and a row (after
// ms.token) and broadcast, two passes over the tile instead of two iotas and two additions.
func (ms *maskSet) tilePositions(g *Graph, rowOff, rows, colOff, cols, shift int) (i, j *Node) {
	i = ms.wait(AddScalar(Iota(g, shapes.Make(dtypes.Int32, 1, 1, rows, 1), 2), float64(rowOff+shift))) // [1, 1, rows, 1]
	j = ms.wait(AddScalar(Iota(g, shapes.Make(dtypes.Int32, 1, 1, 1, cols), 3), float64(colOff)))       // [1, 1, 1, cols]
	return BroadcastToDims(i, 1, 1, rows, cols), BroadcastToDims(j, 1, 1, rows, cols)
}

// blockAllowed returns the bool "may attend" tile [B|1, h|1, rows, cols] for rows
// [rowOff, rowOff+rows) and columns [colOff, colOff+cols), combining the bool masks and the causal
// mask, or nil if every pair in the tile is allowed.
func (ms *maskSet) blockAllowed(g *Graph, rowOff, rows, colOff, cols int) *Node {
	var parts []*Node
	for _, m := range ms.allowed {
		parts = append(parts, ms.block(m, rowOff, rows, colOff, cols))
	}
	if c := ms.causalTile(g, rowOff, rows, colOff, cols); c != nil {
		parts = append(parts, c)
	}
	if w := ms.windowTile(g, rowOff, rows, colOff, cols); w != nil {
		parts = append(parts, w)
	}
	return combine(parts, LogicalAnd)
}

// blockBias returns the additive tile [B|1, h|1, rows, cols] (sum of additive masks) or nil.
func (ms *maskSet) blockBias(rowOff, rows, colOff, cols int) *Node {
	var parts []*Node
	for _, m := range ms.bias {
		parts = append(parts, ms.block(m, rowOff, rows, colOff, cols))
	}
	return combine(parts, Add)
}

// The causal rule, written once. Queries and keys get positions in one sequence; the query at
// position i may see the keys at positions j ≤ i. Key j's position is j. Query row r's position
// is r + shift, with shift 0 for CausalTopLeft and Lk − Lq for CausalBottomRight (Lk counting the
// keys before any extra add_bias_kv / add_zero_attn columns, which every query sees); for a KV
// cache it is pos + r. causalSees is the rule on host integers (FlashAttention uses it to skip
// tiles), causalSeesNode the same rule in the graph.

// causalSees reports whether the query at position i may see the key at position j.
func causalSees(i, j int) bool { return j <= i }

// causalSeesNode is causalSees on int32 position nodes of the same shape: bool, true = may see.
func causalSeesNode(i, j *Node) *Node { return LessOrEqual(j, i) }

// queryPosition is the causal position of query row r (see causalSees).
func (ms *maskSet) queryPosition(r int) int {
	if ms.causal == CausalBottomRight {
		return r + ms.causalLk - ms.lq
	}
	return r
}

// causalTile is the causal "may attend" tile [1, 1, rows, cols], or nil without a causal mask:
// query row rowOff+r may see key colOff+c by causalSees, and always the extra keys from
// ms.causalLk on.
func (ms *maskSet) causalTile(g *Graph, rowOff, rows, colOff, cols int) *Node {
	if ms.causal == NoCausal {
		return nil
	}
	i, j := ms.tilePositions(g, rowOff, rows, colOff, cols, ms.queryPosition(0)) // query and key positions, [1, 1, rows, cols]
	sees := causalSeesNode(i, j)                                                 // [1, 1, rows, cols]
	if colOff+cols <= ms.causalLk {
		return sees // no extra key in the tile
	}
	extra := GreaterOrEqual(j, Scalar(g, dtypes.Int32, ms.causalLk)) // [1, 1, rows, cols]
	return LogicalOr(sees, extra)                                    // [1, 1, rows, cols]
}

// combine reduces tiles [B|1, h|1, rows|1, cols] with op, broadcasting size-1 axes.
func combine(parts []*Node, op func(a, b *Node) *Node) *Node {
	if len(parts) == 0 {
		return nil
	}
	out := parts[0]
	for _, p := range parts[1:] {
		dims := make([]int, 4)
		for a := range dims {
			dims[a] = max(out.Shape().Dimensions[a], p.Shape().Dimensions[a])
		}
		out = op(BroadcastToDims(out, dims...), BroadcastToDims(p, dims...))
	}
	return out
}

// apply masks a tile of scaled logits [B, h, rows, cols] whose top-left element is the pair
// (query rowOff, key colOff): additive masks are added, blocked pairs are set to the fill value.
func (ms *maskSet) apply(logits *Node, rowOff, colOff int) *Node {
	dims := logits.Shape().Dimensions
	rows, cols := dims[2], dims[3]
	if ms.softCap > 0 {
		logits = MulScalar(Tanh(MulScalar(logits, 1/ms.softCap)), ms.softCap) // [B, h, rows, cols]
	}
	if ms.alibi != nil {
		i, j := ms.tilePositions(logits.Graph(), rowOff, rows, colOff, cols, 0) // [1, 1, rows, cols]
		bias := alibiBias(ms.alibi, i, j, logits.DType())                       // [1, h, rows, cols]
		logits = Add(logits, BroadcastToDims(bias, dims...))                    // [B, h, rows, cols]
	}
	if b := ms.blockBias(rowOff, rows, colOff, cols); b != nil {
		logits = Add(logits, BroadcastToDims(b, dims...)) // [B, h, rows, cols]
	}
	if a := ms.blockAllowed(logits.Graph(), rowOff, rows, colOff, cols); a != nil {
		if !differentiableSlices(logits.Graph()) && math.IsInf(ms.fill, -1) && !a.Shape().Equal(logits.Shape()) {
			return blockAsBias(logits, a) // the pure-Go backend (maskbias.go)
		}
		fill := Scalar(logits.Graph(), logits.DType(), ms.fill)
		logits = Where(BroadcastToDims(a, dims...), logits, fill) // [B, h, rows, cols]
	}
	return logits
}
