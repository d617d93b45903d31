package mhalib

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/internal/backendtest"
)

// TestFlashByRowsFits checks which FlashAttention graphs take the pure-Go backend's path by
// query blocks (flashrows.go): plain and causal self-attention without other masks do, and so
// does causal self-attention with a window; every other mask, a window without the causal mask,
// Lq ≠ Lk with a causal mask, GQA and backends with Pad (XLA) do not.
func TestFlashByRowsFits(t *testing.T) {
	goBackend, err := backendtest.Get("go")
	if err != nil {
		t.Skipf("go backend: %v", err)
	}
	g := NewGraph(goBackend, "fits")
	defer g.Finalize()
	const B, h, L = 2, 4, 16
	padMask := Parameter(g, "pad", shapes.Make(dtypes.Bool, B, 1, 1, L))
	for _, c := range []struct {
		name string
		ms   maskSet
		hkv  int
		want bool
	}{
		{"plain", maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L}, h, true},
		{"plain Lq≠Lk", maskSet{batch: B, heads: h, lq: 5, lk: L, causalLk: L}, h, true},
		{"causal", maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L, causal: CausalTopLeft}, h, true},
		{"causal bottom-right", maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L, causal: CausalBottomRight}, h, true},
		{"causal Lq<Lk", maskSet{batch: B, heads: h, lq: 5, lk: L, causalLk: L, causal: CausalBottomRight}, h, false},
		{"causal + bias_kv", maskSet{batch: B, heads: h, lq: L, lk: L + 1, causalLk: L, causal: CausalTopLeft}, h, false},
		{"key padding", maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L, allowed: []*Node{padMask}}, h, false},
		{"window", maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L, window: &Window{Left: 4}}, h, false},
		{"causal window", maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L, causal: CausalTopLeft, window: &Window{Left: 4}}, h, true},
		{"causal window bottom-right", maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L, causal: CausalBottomRight,
			window: &Window{Left: 4, Right: 2, Align: AlignBottomRight}}, h, true},
		{"causal window Lq<Lk", maskSet{batch: B, heads: h, lq: 5, lk: L, causalLk: L, causal: CausalBottomRight, window: &Window{Left: 4}}, h, false},
		{"soft-cap", maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L, softCap: 30}, h, false},
		{"GQA", maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L}, 2, false},
	} {
		if got := flashByRowsFits(g, &c.ms, c.hkv); got != c.want {
			t.Errorf("%s: flashByRowsFits = %v, want %v", c.name, got, c.want)
		}
	}
	if xla, err := backendtest.Get("xla:cpu"); err == nil {
		gx := NewGraph(xla, "fits-xla")
		defer gx.Finalize()
		if flashByRowsFits(gx, &maskSet{batch: B, heads: h, lq: L, lk: L, causalLk: L}, h) {
			t.Error("xla:cpu: flashByRowsFits = true, want false (XLA keeps flash.go's tiles)")
		}
	}
}

// TestFlashByRowsBlock checks the rows per query block: blockQ, fewer where a tile of scores
// would pass flashByRowsTileElems, never fewer than 16 (or blockQ if smaller).
func TestFlashByRowsBlock(t *testing.T) {
	for _, c := range []struct{ batch, heads, lk, blockQ, want int }{
		{1, 8, 8192, 512, 256},       // 16 Mi / (8·8192) = 256
		{1, 8, 4096, 512, 512},       // long: 16 Mi / (8·4096) = 512 = blockQ
		{1, 8, 1024, 512, 512},       // fits: blockQ
		{8, 12, 1024, 512, 160},      // llm: 170 rounded down to a multiple of 16
		{1, 8, 1 << 20, 512, 16},     // at least 16
		{1, 2, 16, 4, 4},             // a small blockQ is kept
		{32, 8, 256, 512, 256},       // 16 Mi / (32·8·256) = 256
		{1, 1, 16, 1 << 30, 1 << 20}, // 16 Mi / 16
	} {
		if got := flashByRowsBlock(c.batch, c.heads, c.lk, c.blockQ); got != c.want {
			t.Errorf("flashByRowsBlock(B=%d, h=%d, Lk=%d, blockQ=%d) = %d, want %d", c.batch, c.heads, c.lk, c.blockQ, got, c.want)
		}
	}
}

// TestFlashByRowsWindow: causal FlashAttention with a window to the left, on the pure-Go
// backend's path by query blocks, equals ScaledDotProductAttention with the same masks — for
// windows narrower than a block, as wide as one, wider than several, and wider than the
// sequence, with blocks that do and do not divide L (rows 16, and blockQ 40 → 16 per block).
func TestFlashByRowsWindow(t *testing.T) {
	backend, err := backendtest.Get("go")
	if err != nil {
		t.Skipf("go backend: %v", err)
	}
	const B, h, L, d = 2, 3, 101, 8
	x := normalTensor(101, 3, B, h, L, d)
	for _, left := range []int{0, 1, 5, 15, 16, 17, 40, 64, 100, 300} {
		for _, blockQ := range []int{16, 40, 512} {
			res := MustExecOnceN(backend, func(x *Node) []*Node {
				q, k, v := Squeeze(Slice(x, AxisElem(0)), 0), Squeeze(Slice(x, AxisElem(1)), 0), Squeeze(Slice(x, AxisElem(2)), 0)
				flash := FlashAttention(q, k, v).BlockSizes(blockQ, 16).Causal(CausalTopLeft).Window(left, 0, AlignTopLeft).Done()
				plain := ScaledDotProductAttention(q, k, v).Causal(CausalTopLeft).Window(left, 0, AlignTopLeft).Done()
				return []*Node{flash, plain}
			}, x)
			if worst := maxAbsDiff32(res[0], res[1]); worst > 1e-5 || math.IsNaN(worst) {
				t.Errorf("window %d, blockQ %d: max |flash − sdpa| = %.2e, want ≤ 1e-5", left, blockQ, worst)
			}
		}
	}
}

// TestFlashByRowsChunks: on the pure-Go backend's path by query blocks, key prefixes longer than
// one chunk (flashByRowsChunk: 512 keys for 128 rows, 600 for 200) are cut into several, the last
// one shorter; causal FlashAttention, without and with windows wider than a chunk, equals
// ScaledDotProductAttention, and so do the gradients of q, k and v (which read the chunked
// forward pass's log-sum-exp).
func TestFlashByRowsChunks(t *testing.T) {
	backend, err := backendtest.Get("go")
	if err != nil {
		t.Skipf("go backend: %v", err)
	}
	const B, h, L, d = 1, 2, 1300, 8
	x := normalTensor(1300, 4, B, h, L, d)
	for _, left := range []int{-1, 700, 1100} {
		for _, blockQ := range []int{128, 200} {
			res := MustExecOnceN(backend, func(x *Node) []*Node {
				part := func(i int) *Node { return Squeeze(Slice(x, AxisElem(i)), 0) } // [B, h, L, d]
				q, k, v, w := part(0), part(1), part(2), part(3)
				fb := FlashAttention(q, k, v).BlockSizes(blockQ, 64).Causal(CausalTopLeft)
				pb := ScaledDotProductAttention(q, k, v).Causal(CausalTopLeft)
				if left >= 0 {
					fb.Window(left, 0, AlignTopLeft)
					pb.Window(left, 0, AlignTopLeft)
				}
				flash, plain := fb.Done(), pb.Done()
				lossF, lossP := ReduceAllSum(Mul(flash, w)), ReduceAllSum(Mul(plain, w))
				return append(append([]*Node{flash, plain}, Gradient(lossF, q, k, v)...), Gradient(lossP, q, k, v)...)
			}, x)
			for i, name := range []string{"output", "dq", "dk", "dv"} {
				a, b := res[2*i], res[2*i+1]
				if i > 0 {
					a, b = res[1+i], res[4+i]
				}
				if worst := maxAbsDiff32(a, b); worst > 1e-4 || math.IsNaN(worst) {
					t.Errorf("window %d, blockQ %d: %s: max |flash − sdpa| = %.2e, want ≤ 1e-4", left, blockQ, name, worst)
				}
			}
		}
	}
}

// normalTensor returns float32 samples of the standard normal distribution, [dims...], from the
// PCG seeded with (7, seed).
func normalTensor(seed uint64, dims ...int) *tensors.Tensor {
	rng := rand.New(rand.NewPCG(7, seed))
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(rng.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// maxAbsDiff32 is max |a − b| over two float32 tensors of the same shape (NaN if either has one).
func maxAbsDiff32(a, b *tensors.Tensor) float64 {
	x, y := tensors.MustCopyFlatData[float32](a), tensors.MustCopyFlatData[float32](b)
	worst := 0.0
	for i := range x {
		d := math.Abs(float64(x[i] - y[i]))
		if math.IsNaN(d) {
			return d
		}
		worst = max(worst, d)
	}
	return worst
}

// TestFlashByRowsNodesPerBlock: causal flashByRows over query blocks of 128 and 256 rows builds
// one index offset per block after the first (one ConvertDType of the token, not one per key or
// value Gather), no Where but the tokens' and the last reads' (the masked tiles add a constant
// 0/−inf tile), reads q, k and v once more after the last product that takes rows of them
// (lateReads: so that fastgo leaves those rows in place), and a block's token is one Gather
// of its first entry, not the block flattened; one such
// constant for each distinct tile, and cuts every diagonal tile in two groups of rows, each
// against the keys up to its last row (blocks of 128: [64, 64] and [64, 128], 3/4 of [128, 128];
// of 256: [128, 128] and [128, 256]); its output equals ScaledDotProductAttention's.
// (Before: 41 ConvertDType, 16 Where, a bool tile and a Where for each diagonal tile, whole
// [128, 128] diagonal score tiles.) The chunk of keys [0, 512) is taken once, for all the blocks
// after it (before: once per block, 4 times with blocks of 128).
func TestFlashByRowsNodesPerBlock(t *testing.T) {
	backend, err := backendtest.Get("go")
	if err != nil {
		t.Skipf("go backend: %v", err)
	}
	const B, h, L, d = 1, 2, 1024, 8 // key chunks of 512
	x := normalTensor(1024, 3, B, h, L, d)
	for _, c := range []struct {
		blockQ int
		tiles  []string // the constant tiles, one each
		diag   int      // scores per head of a block's diagonal tile
	}{
		{128, []string{"(Float32)[1 1 64 64]", "(Float32)[1 1 64 128]"}, 64 * (64 + 128)},
		{256, []string{"(Float32)[1 1 128 128]", "(Float32)[1 1 128 256]"}, 128 * (128 + 256)},
	} {
		blocks := L / c.blockQ
		counts := map[NodeType]int{}
		tiles := map[string]int{}      // constant float32 tiles by shape
		scoreElems := 0                // q·kᵀ scores per (batch, head)
		wholeChunks := 0               // Gathers of 512 keys or values: the chunk [0, 512)
		flattened := 0                 // Reshapes to one axis of more than one element (copies on the pure-Go backend)
		var g0 struct{ nodes []*Node } // flashByRows's nodes
		res := MustExecOnceN(backend, func(x *Node) []*Node {
			part := func(i int) *Node { return Squeeze(Slice(x, AxisElem(i)), 0) } // [B, h, L, d]
			q, k, v := part(0), part(1), part(2)
			g := x.Graph()
			first := len(g.Nodes())
			ms := newMaskSet(B, h, L, L, dtypes.Float32, Mask{}, "mask", Mask{}, "key padding mask", CausalTopLeft, math.Inf(-1))
			flash, _ := flashByRows(q, k, v, 1/math.Sqrt(d), ms, c.blockQ, false)
			g0.nodes = g.Nodes()[first:]
			for _, n := range g.Nodes()[first:] {
				counts[n.Type()]++
				dims := n.Shape().Dimensions
				switch {
				case n.Type() == NodeTypeConstant && n.DType() == dtypes.Float32 && len(dims) == 4:
					tiles[n.Shape().String()]++
				case n.Type() == NodeTypeDotGeneral && len(dims) == 4 && dims[3] != d:
					scoreElems += dims[2] * dims[3]
				case n.Type() == NodeTypeGather && len(dims) == 4 && dims[0] == 512:
					wholeChunks++
				case n.Type() == NodeTypeReshape && len(dims) == 1 && dims[0] > 1:
					flattened++
				}
			}
			plain := ScaledDotProductAttention(q, k, v).Causal(CausalTopLeft).Done()
			return []*Node{flash, plain}
		}, x)
		if got := counts[NodeTypeConvertDType]; got != blocks-1 {
			t.Errorf("blockQ %d: %d ConvertDType nodes, want %d (one per block after the first)", c.blockQ, got, blocks-1)
		}
		if got := counts[NodeTypeWhere]; got != blocks+1 {
			t.Errorf("blockQ %d: %d Where nodes, want %d (the finiteness of the blocks' tokens and of the last reads' +0 only)", c.blockQ, got, blocks+1)
		}
		wantTiles := map[string]int{}
		for _, s := range c.tiles {
			wantTiles[s] = 1
		}
		if fmt.Sprint(tiles) != fmt.Sprint(wantTiles) {
			t.Errorf("blockQ %d: constant tiles %v, want %v", c.blockQ, tiles, wantTiles)
		}
		prefix := c.blockQ * c.blockQ * blocks * (blocks - 1) / 2 // rows × keys before each block
		if want := prefix + blocks*c.diag; scoreElems != want {
			t.Errorf("blockQ %d: %d scores per head, want %d (diagonal tiles in two groups of rows: %d each)", c.blockQ, scoreElems, want, c.diag)
		}
		if late := lateReads(g0.nodes); late != "" {
			t.Errorf("blockQ %d: %s", c.blockQ, late)
		}
		if flattened != 0 {
			t.Errorf("blockQ %d: %d Reshapes to one axis, want 0 (a block's token is one Gather of its first entry, not a copy of the block flattened)", c.blockQ, flattened)
		}
		if wholeChunks != 2 {
			t.Errorf("blockQ %d: %d Gathers of the chunk [0, 512), want 2 (its keys and values, taken once for every block after it)", c.blockQ, wholeChunks)
		}
		if worst := maxAbsDiff32(res[0], res[1]); worst > 1e-5 || math.IsNaN(worst) {
			t.Errorf("blockQ %d: max |flash − sdpa| = %.2e, want ≤ 1e-5", c.blockQ, worst)
		}
	}
}

// lateReads checks that every operand the blocks take rows of (a Gather's first input) is read
// again after the last product that reads one of its Gathers, by a node the output depends on,
// so that the pure-Go backend's fastgo may leave those rows where they are (gatherview.go);
// "" when it is so, else what is not.
func lateReads(nodes []*Node) string {
	out := nodes[len(nodes)-1]
	live := map[*Node]bool{}
	var mark func(n *Node)
	mark = func(n *Node) {
		if live[n] {
			return
		}
		live[n] = true
		for _, in := range n.Inputs() {
			mark(in)
		}
	}
	mark(out)
	lastDot := map[*Node]NodeId{} // source → the last product reading one of its Gathers
	lastUse := map[*Node]NodeId{} // source → its last use reaching the output
	for _, n := range nodes {
		for _, in := range n.Inputs() {
			if live[n] {
				lastUse[in] = max(lastUse[in], n.Id())
			}
			if in.Type() == NodeTypeGather && n.Type() == NodeTypeDotGeneral && in.Shape().Rank() == 4 {
				src := in.Inputs()[0]
				lastDot[src] = max(lastDot[src], n.Id())
			}
		}
	}
	for src, d := range lastDot {
		if lastUse[src] <= d {
			return fmt.Sprintf("%s (node #%d) is last read by node #%d, the product #%d reads its rows after that", src.Shape(), src.Id(), lastUse[src], d)
		}
	}
	return ""
}
