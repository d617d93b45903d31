package smollm2

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"

	"github.com/mhalab/mhalab/mhalib"
)

// positions is what every decoder layer of one graph shares: the new positions [pos, pos+n),
// their RoPE tables, the causal mask of the attention logits and the cache rows they fill —
// built once per graph, not once per layer. (A one-token step of the pure-Go backend runs each
// node on its own; built per layer, these were ~50 of the ~139 nodes of every layer.)
type positions struct {
	pos      *Node               // scalar int32: the first new position
	n        int                 // new positions
	cos, sin *Node               // [1, n, 1, hd]: RoPE's tables (sin with rotateHalf's sign: −sin on the first half)
	allowed  map[int]*Node       // mask's, by key length
	place    map[[4]int][2]*Node // scatter's, by cache dims
}

// newPositions builds the RoPE tables of positions [pos, pos+n) for heads of size hd, base
// theta, in Hugging Face's half-split convention (pairs (i, i + hd/2)), as mhalib.RoPE computes
// them (angles and their sines in float64, then float32): the same values.
func newPositions(pos *Node, n, hd int, theta float64) *positions {
	g := pos.Graph()
	freq := make([]float64, hd) // [hd]
	sign := make([]float64, hd) // [hd]: −1 on the first half, whose partner is x[i + hd/2]
	for k := range hd / 2 {
		f := math.Pow(theta, -2*float64(k)/float64(hd))
		freq[k], freq[k+hd/2] = f, f
		sign[k], sign[k+hd/2] = -1, 1
	}
	p := Add(Iota(g, shapes.Make(dtypes.Int32, n, 1), 0), pos)                  // [n, 1]
	angles := Mul(ConvertDType(p, dtypes.Float64), Const(g, [][]float64{freq})) // [n, hd]
	cos := ConvertDType(Cos(angles), dtypes.Float32)                            // [n, hd]
	sin := ConvertDType(Mul(Sin(angles), Const(g, [][]float64{sign})), dtypes.Float32)
	return &positions{
		pos: pos, n: n,
		cos: Reshape(cos, 1, n, 1, hd), sin: Reshape(sin, 1, n, 1, hd),
		allowed: map[int]*Node{}, place: map[[4]int][2]*Node{},
	}
}

// rope rotates x [B, n, h, hd] (the new positions, heads second): x·cos + rotateHalf(x)·sin
// with rotateHalf(x) = (−x[hd/2:], x[:hd/2]) — mhalib.RoPE's x·cos + (x·R)·sin element by
// element, with R's signs in the table.
func (p *positions) rope(x *Node) *Node {
	hd := x.Shape().Dim(3)
	swapped := Concatenate([]*Node{SliceAxis(x, 3, AxisRange(hd/2, hd)), SliceAxis(x, 3, AxisRange(0, hd/2))}, 3) // [B, n, h, hd]
	return Add(Mul(x, p.cos), Mul(swapped, p.sin))                                                                // [B, n, h, hd]
}

// mask returns the causal rule for logits of dims [B, Hkv, G, n, S] (keys at positions
// 0 … S−1): query row r sees key j iff j ≤ pos + r; one per key length S.
func (p *positions) mask(dims []int) *Node {
	S := dims[4]
	if m, ok := p.allowed[S]; ok {
		return m
	}
	g := p.pos.Graph()
	tile := shapes.Make(dtypes.Int32, 1, 1, 1, p.n, S)
	row := Add(Iota(g, tile, 3), p.pos)                  // [1, 1, 1, n, S]: position of the query
	col := Iota(g, tile, 4)                              // [1, 1, 1, n, S]: position of the key
	m := BroadcastToDims(LessOrEqual(col, row), dims...) // [B, Hkv, G, n, S]
	p.allowed[S] = m
	return m
}

// scatter returns what a one-position cache update of dims [B, h, S, dim] scatters with: the
// index of the new row of every (batch, head) [B·h, 3] int32 — (b, head, pos) — and a row of
// −Inf per index [B·h, dim]; one per shape.
func (p *positions) scatter(dims []int) (index, negInf *Node) {
	key := [4]int(dims)
	if m, ok := p.place[key]; ok {
		return m[0], m[1]
	}
	B, h, dim := dims[0], dims[1], dims[3]
	g := p.pos.Graph()
	base := make([][]int32, B*h) // [B·h, 3]: (b, head, 0)
	for i := range base {
		base[i] = []int32{int32(i / h), int32(i % h), 0}
	}
	index = Add(Const(g, base), Mul(Const(g, [][]int32{{0, 0, 1}}), p.pos)) // [B·h, 3]
	negInf = BroadcastToDims(Infinity(g, dtypes.Float32, -1), B*h, dim)     // [B·h, dim]
	p.place[key] = [2]*Node{index, negInf}
	return index, negInf
}

// appendOne is mhalib's KVCache.Append of one new position — k, v [B, Hkv, 1, hd] stored in the
// cache variables "keys" and "values" [B, Hkv, maxLen, hd] of ctx's scope — for a backend
// without DynamicUpdateSlice (the pure-Go one): the new row of every (batch, head) is set by two
// scatters that touch only that row, min(row, −Inf) then max(−Inf, k) — exactly k (for k not
// NaN) — each in the cache's own buffer (handed over: context.Exec donates the variables it
// updates), instead of a pass over the whole cache. Other backends, and several new positions,
// use KVCache.Append.
func appendOne(ctx *context.Context, cache *mhalib.KVCache, p *positions, k, v *Node) (keys, values *Node) {
	g := k.Graph()
	if p.n != 1 || k.DType() != dtypes.Float32 || g.Backend().Capabilities().Operations[backends.OpTypeDynamicUpdateSlice] {
		return cache.Append(ctx, k, v, p.pos)
	}
	put := func(name string, x *Node) *Node {
		dims := x.Shape().Clone().Dimensions
		dims[2] = cache.Cap()
		shape := shapes.Make(x.DType(), dims...)
		variable := ctx.GetVariableByScopeAndName(ctx.Scope(), name)
		if variable == nil {
			variable = ctx.Checked(false).WithInitializer(initializers.Zero).VariableWithShape(name, shape)
			variable.Trainable = false
		} else if !variable.Shape().Equal(shape) {
			panic(fmt.Errorf("smollm2: cache variable %s/%s holds shape %s, this cache needs %s", ctx.Scope(), name, variable.Shape(), shape))
		}
		cache.Holds(variable) // Reset zeroes it
		index, negInf := p.scatter(dims)
		cleared := ScatterMin(variable.ValueGraph(g), index, negInf, true, true)                // [B, Hkv, maxLen, hd]: the new rows −Inf
		updated := ScatterMax(cleared, index, Reshape(x, dims[0]*dims[1], dims[3]), true, true) // [B, Hkv, maxLen, hd]
		variable.SetValueGraph(updated)
		return updated
	}
	return put(mhalib.VarCacheKeys, k), put(mhalib.VarCacheValues, v)
}
