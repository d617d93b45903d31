package fastgo

import (
	"fmt"
	"math"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Softmax's three passes as one: e = Exp(Sub(s, m)) and, when the graph also asks for it,
// ReduceSum(e) over the last axis.
//
// mhalib's causal flash on this backend (flashByRows, fastgo's BenchmarkMHA/long_causal) weighs
// each tile of scores s [B, h, rows, cols] by e = exp(s − m) with the rows' maxima m
// [B, h, rows, 1], and adds each row of e. As three nodes, each tile of 8 MiB (B1 h8, 512 × 512)
// went through memory five times: Sub read and wrote it, Exp read and wrote it, ReduceSum read
// it — 13% of the CPU time in a profile, far more than their arithmetic. Here the Sub executor,
// when its node is such a Sub whose one use in the whole graph is an Exp, computes exp(s − m)
// row by row, adding each row while it is in L1 when one of the Exp's uses is a ReduceSum over
// the last axis: one read and one write of the tile. The Exp then hands its input on unchanged,
// and the ReduceSum returns the sums already made. The values are those of the three executors
// run apart, bit for bit (the same vector subtraction, exp and row sum on the same rows).
//
// The executors know their own node only; the graph's other nodes are read from simplego's
// unexported fields (Node's inputs, opType and builder; Builder's nodes and outputs), found with
// reflection at start-up like node.go's — without them nothing is fused. Which Exp and
// ReduceSum take over the work travels with the Sub's output buffer (fusedTiles): every Sub and
// Exp executor that does not fuse drops any entry for the buffer it returns, so an entry left by
// an execution that failed half-way is never read by a later one.

// fusedTile is what a fused Sub computed into its output buffer: exp(s − m), to be handed on by
// exp (nil once it has), and the rows' sums, to be returned by sum (nil: none computed).
//
// A Sub that defers (fuse_expdot.go) leaves s in its output buffer instead, with m and dot, the
// DotGeneral that is to make e; dot is nil once e is made (by dot, or in the buffer by
// materialize). mu orders dot and sum, which GoMLX's parallel executor may run side by side.
type fusedTile struct {
	exp, sum *simplego.Node
	sums     []float32
	dot      *simplego.Node
	m        []float32
	mu       sync.Mutex
	// via, when set, is the Identity between the Exp and dot (mhalib's softmaxSum: a custom
	// gradient); s is the deferred buffer's data, and alias/aliasFlat the Identity's output
	// buffer, which holds nothing until dot (or materialize) makes e in it.
	via       *simplego.Node
	s         []float32
	alias     *simplego.Buffer
	aliasFlat []float32
}

var (
	// fusedTiles: *simplego.Buffer → *fusedTile; fusedLive counts its entries.
	fusedTiles sync.Map
	fusedLive  atomic.Int64
	// fusedCalls counts the Subs computed as exp(s − m); fuseOn switches fusing (tests).
	fusedCalls atomic.Int64
	// deferredCalls counts the Subs that left s for a DotGeneral to make e, expDotCalls the
	// DotGenerals that made it (fuse_expdot.go).
	deferredCalls, expDotCalls atomic.Int64
	fuseOn                     atomic.Bool

	nodeInputsOffset, nodeOpOffset, nodeBuilderOffset uintptr
	builderNodesOffset, builderOutputsOffset          uintptr
	nodeIdxOffset                                     uintptr
	graphFieldsErr                                    = findGraphFields()
)

func init() { fuseOn.Store(true) }

// findGraphFields finds the offsets of simplego.Node's inputs, builderIdx, opType and builder and of
// simplego.Builder's nodes and outputs, checking their types.
func findGraphFields() error {
	nodeT, builderT := reflect.TypeOf(simplego.Node{}), reflect.TypeOf(simplego.Builder{})
	nodes := reflect.TypeOf([]*simplego.Node{})
	find := func(t reflect.Type, name string, want reflect.Type) (uintptr, error) {
		f, ok := t.FieldByName(name)
		if !ok || f.Type != want {
			return 0, fmt.Errorf("fastgo: simplego.%s has no field `%s %s` (GoMLX other than v0.26.0?)", t.Name(), name, want)
		}
		return f.Offset, nil
	}
	var err error
	for _, f := range []struct {
		t    reflect.Type
		name string
		want reflect.Type
		off  *uintptr
	}{
		{nodeT, "inputs", nodes, &nodeInputsOffset},
		{nodeT, "builderIdx", reflect.TypeOf(0), &nodeIdxOffset},
		{nodeT, "opType", reflect.TypeOf(backends.OpType(0)), &nodeOpOffset},
		{nodeT, "builder", reflect.TypeOf(&simplego.Builder{}), &nodeBuilderOffset},
		{builderT, "nodes", nodes, &builderNodesOffset},
		{builderT, "outputs", nodes, &builderOutputsOffset},
	} {
		if *f.off, err = find(f.t, f.name, f.want); err != nil {
			return err
		}
	}
	return nil
}

func nodeInputs(n *simplego.Node) []*simplego.Node {
	return *(*[]*simplego.Node)(unsafe.Add(unsafe.Pointer(n), nodeInputsOffset))
}

func nodeOp(n *simplego.Node) backends.OpType {
	return *(*backends.OpType)(unsafe.Add(unsafe.Pointer(n), nodeOpOffset))
}

// graphOf returns the nodes and outputs of n's graph.
func graphOf(n *simplego.Node) (nodes, outputs []*simplego.Node) {
	b := *(**simplego.Builder)(unsafe.Add(unsafe.Pointer(n), nodeBuilderOffset))
	if b == nil {
		return nil, nil
	}
	p := unsafe.Pointer(b)
	return *(*[]*simplego.Node)(unsafe.Add(p, builderNodesOffset)), *(*[]*simplego.Node)(unsafe.Add(p, builderOutputsOffset))
}

// users returns the nodes of the graph that take n as an input (once each), in the graph's
// order (graphindex.go).
func users(n *simplego.Node, nodes []*simplego.Node) []*simplego.Node {
	if ix := indexOf(n, nodes); ix != nil {
		i := nodeIndex(n)
		at := ix.at[ix.first[i]:ix.first[i+1]]
		out := make([]*simplego.Node, len(at))
		for k, u := range at {
			out[k] = nodes[u]
		}
		return out
	}
	return scanUsers(n, nodes)
}

// scanUsers is users by a scan of every node.
func scanUsers(n *simplego.Node, nodes []*simplego.Node) []*simplego.Node {
	var out []*simplego.Node
	for _, u := range nodes {
		for _, in := range nodeInputs(u) {
			if in == n {
				out = append(out, u)
				break
			}
		}
	}
	return out
}

// fuseMinElems is the fewest elements of a Sub that fusePlan looks at: finding the users of a
// node reads every node of the graph (a few µs per thousand nodes), which a large tile's passes
// repay and a decoding step's softmax over one row per head would not (SmolLM2's ~30 per token).
const fuseMinElems = 1 << 18

// fusePlan returns the Exp that is the one use of Sub node sub (s [.., cols] − m [.., 1], out:
// s's shape) and, if one of that Exp's uses is a ReduceSum over the last axis, that ReduceSum;
// exp is nil when sub cannot be fused.
func fusePlan(sub *simplego.Node, out, s, m shapes.Shape) (exp, sum, dot, via *simplego.Node) {
	rank := out.Rank()
	if graphFieldsErr != nil || !fuseOn.Load() || out.Size() < fuseMinElems || rank == 0 || !s.Equal(out) || m.Rank() != rank || m.Dimensions[rank-1] != 1 || out.Dimensions[rank-1] < 2 {
		return nil, nil, nil, nil
	}
	for a := range rank - 1 {
		if m.Dimensions[a] != out.Dimensions[a] {
			return nil, nil, nil, nil
		}
	}
	nodes, outputs := graphOf(sub)
	if isOutput(sub, outputs) {
		return nil, nil, nil, nil
	}
	subUsers := users(sub, nodes)
	if len(subUsers) != 1 || nodeOp(subUsers[0]) != backends.OpTypeExp {
		return nil, nil, nil, nil
	}
	exp = subUsers[0]
	sum = lastAxisReduce(exp, nodes, backends.OpTypeReduceSum, rank)
	if !isOutput(exp, outputs) {
		dot, via = expDotPlan(exp, sum, nodes, outputs)
	}
	return exp, sum, dot, via
}

// isOutput reports whether n is one of its graph's outputs (a buffer simplego hands back, which
// no fused op may leave anything with).
func isOutput(n *simplego.Node, outputs []*simplego.Node) bool {
	for _, o := range outputs {
		if o == n {
			return true
		}
	}
	return false
}

// lastAxisReduce returns the first use of n (of rank rank) among nodes that reduces with op
// over the last axis alone, or nil.
func lastAxisReduce(n *simplego.Node, nodes []*simplego.Node, op backends.OpType, rank int) *simplego.Node {
	for _, u := range users(n, nodes) {
		if axes, ok := nodeInts(u); ok && nodeOp(u) == op && len(axes) == 1 && axes[0] == rank-1 {
			return u
		}
	}
	return nil
}

// execFusedSub computes Sub node sub as exp(s − m) (and the rows' sums) when fusePlan allows;
// ok false: not fused, nothing done.
func execFusedSub(backend *simplego.Backend, sub *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (out *simplego.Buffer, ok bool, err error) {
	// The pass below calls the vector loops, whose results the executors apart return: without
	// them (no AVX-512, no AVX2) nothing is fused.
	if !enabled.Load() || !(vecAVX512 || vecAVX2) || len(inputs) != 2 {
		return nil, false, nil
	}
	outShape := nodeShape(sub)
	sShape, err := backend.BufferShape(inputs[0])
	if err != nil {
		return nil, false, err
	}
	mShape, err := backend.BufferShape(inputs[1])
	if err != nil {
		return nil, false, err
	}
	s, ok1 := mustFlat[float32](backend, inputs[0])
	m, ok2 := mustFlat[float32](backend, inputs[1])
	if !ok1 || !ok2 {
		return nil, false, nil
	}
	exp, sum, dot, via := fusePlan(sub, outShape, sShape, mShape)
	if exp == nil {
		return nil, false, nil
	}
	rows := len(m)
	tile := &fusedTile{exp: exp, sum: sum}
	if sum != nil {
		tile.sums = make([]float32, rows)
	}
	if dot != nil && inputsOwned[0] {
		// fuse_expdot.go: s handed on as it is, e made by dot
		out = inputs[0]
		inputs[0] = nil
		tile.dot, tile.m, tile.via, tile.s = dot, append([]float32(nil), m...), via, s
		deferredCalls.Add(1)
	} else {
		var e []float32
		out, e, err = overFirst(backend, inputs, inputsOwned, s, outShape)
		if err != nil {
			return nil, false, err
		}
		expRowsParallel(e, s, m, tile.sums, backendParallelism(backend))
	}
	if _, loaded := fusedTiles.Swap(out, tile); !loaded {
		fusedLive.Add(1)
	}
	fusedCalls.Add(1)
	count(opSub)
	return out, true, nil
}

// overFirst returns the output of a fused op computed over its first input s: that input's
// buffer when simplego hands it over (taken: inputs[0] = nil, simplego's convention), else a new
// buffer of shape, with its data.
func overFirst(backend *simplego.Backend, inputs []*simplego.Buffer, inputsOwned []bool, s []float32, shape shapes.Shape) (*simplego.Buffer, []float32, error) {
	if inputsOwned[0] {
		out := inputs[0]
		inputs[0] = nil
		return out, s, nil
	}
	out, flat, err := newOutput(backend, shape)
	if err != nil {
		return nil, nil, err
	}
	return out, flat.([]float32), nil
}

// mustFlat returns buf's flat data if it is a []T.
func mustFlat[T Float](backend *simplego.Backend, buf *simplego.Buffer) ([]T, bool) {
	flat, err := backend.BufferData(buf)
	if err != nil {
		return nil, false
	}
	v, ok := flat.([]T)
	return v, ok
}

// takeFusedExp returns the Exp node's input when a fused Sub already computed it (ok), taking it
// over as the output when simplego hands it over, else a copy.
func takeFusedExp(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, inputsOwned []bool) (*simplego.Buffer, bool, error) {
	if fusedLive.Load() == 0 || len(inputs) != 1 {
		return nil, false, nil
	}
	v, found := fusedTiles.Load(inputs[0])
	if !found || v.(*fusedTile).exp != node {
		return nil, false, nil
	}
	tile := v.(*fusedTile)
	in := inputs[0]
	if !inputsOwned[0] {
		// Not ours to hand on (simplego keeps it): a copy, which the ReduceSum will not find.
		dropFused(in)
		out, flat, err := newOutput(backend, nodeShape(node))
		if err != nil {
			return nil, false, err
		}
		src, _ := mustFlat[float32](backend, in)
		tile.mu.Lock()
		defer tile.mu.Unlock()
		if tile.dot != nil { // s, not e: e made into the copy
			expRowsParallel(flat.([]float32), src, tile.m, nil, backendParallelism(backend))
		} else {
			copy(flat.([]float32), src)
		}
		count(opExp)
		return out, true, nil
	}
	inputs[0] = nil
	if tile.sum == nil && tile.dot == nil {
		dropFused(in)
	} else {
		tile.exp = nil
	}
	count(opExp)
	return in, true, nil
}

// takeFusedSum returns the ReduceSum node's result when a fused Sub computed its input's row sums.
func takeFusedSum(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer) (*simplego.Buffer, bool, error) {
	if fusedLive.Load() == 0 || len(inputs) != 1 {
		return nil, false, nil
	}
	v, found := fusedTiles.Load(inputs[0])
	if !found || v.(*fusedTile).sum != node || v.(*fusedTile).exp != nil {
		return nil, false, nil
	}
	tile := v.(*fusedTile)
	tile.mu.Lock()
	defer tile.mu.Unlock()
	if tile.dot != nil { // the DotGeneral that was to make e has not run: e made here, in place
		s, ok := mustFlat[float32](backend, inputs[0])
		if !ok {
			return nil, false, nil
		}
		tile.materialize(s, s, backendParallelism(backend))
		if tile.aliasFlat != nil { // the Identity's output too, which dot reads
			parallelCopy(tile.aliasFlat, s, backendParallelism(backend))
			dropFused(tile.alias)
		}
	}
	dropFused(inputs[0])
	return reductionOf(backend, node, opReduceSum, tile.sums)
}

// reductionOf returns a new buffer of the reduction node's shape holding vals (computed before),
// counted as op o.
func reductionOf(backend *simplego.Backend, node *simplego.Node, o op, vals []float32) (*simplego.Buffer, bool, error) {
	out, flat, err := newOutput(backend, nodeShape(node))
	if err != nil {
		return nil, false, err
	}
	copy(flat.([]float32), vals)
	count(o)
	return out, true, nil
}

// dropFused forgets what a fused Sub left for buffer b (nothing if it left nothing).
func dropFused(b *simplego.Buffer) {
	if b != nil && fusedLive.Load() > 0 {
		if _, loaded := fusedTiles.LoadAndDelete(b); loaded {
			fusedLive.Add(-1)
		}
	}
}

// The rows' maxima of a DotGeneral's output, made by the GEMM: flashrows' m = ReduceMax(s) of
// each tile of scores s = q·kᵀ [B, h, rows, cols] read the tile, 8 MiB at long causal, again
// from memory after the GEMM wrote it (6% of the CPU time once the passes above were fused).
// When the DotGeneral's one use is the Reshape simplego puts after it (to its [batch…, cross…]
// shape) and one use of that Reshape is a ReduceMax over the last axis, the GEMM takes each
// task's rows' maxima right after computing them (gemmThen), while they are in the cache, and
// the ReduceMax returns them: the same maxRow on the same rows as its own executor, bit for bit.
// The Reshape hands the DotGeneral's buffer on (its one use), so the maxima travel with that
// buffer (gemmMaxima); every DotGeneral drops any entry for the buffer it returns otherwise.

// rowMaxTile is the maxima a DotGeneral left with its output for the ReduceMax node max.
type rowMaxTile struct {
	max    *simplego.Node
	maxima []float32
}

var gemmMaxima sync.Map // *simplego.Buffer → *rowMaxTile (DotGenerals' and fuse_addmax.go's Adds')

// rowMaxima returns where to put the maxima of the rows rows × cols of DotGeneral node dot's
// output for the ReduceMax that follows, or nil (no such ReduceMax: nothing to do).
func rowMaxima(dot *simplego.Node, rows, cols int) *rowMaxTile {
	if graphFieldsErr != nil || !fuseOn.Load() || rows*cols < fuseMinElems || cols < 2 {
		return nil
	}
	nodes, outputs := graphOf(dot)
	if isOutput(dot, outputs) {
		return nil
	}
	us := users(dot, nodes)
	if len(us) != 1 || nodeOp(us[0]) != backends.OpTypeReshape {
		return nil
	}
	shape := nodeShape(us[0])
	rank := shape.Rank()
	if rank == 0 || shape.Dimensions[rank-1] != cols {
		return nil
	}
	if u := lastAxisReduce(us[0], nodes, backends.OpTypeReduceMax, rank); u != nil {
		return &rowMaxTile{max: u, maxima: make([]float32, rows)}
	}
	return nil
}

// rows returns gemmThen's done for out [batch, m, n] (nil for a nil tile): the maxima of the
// rows it is given, as the ReduceMax executor computes them.
func (t *rowMaxTile) rows(out []float32, m, n int) func(b, i0, i1 int) {
	if t == nil {
		return nil
	}
	return func(b, i0, i1 int) {
		for i := b*m + i0; i < b*m+i1; i++ {
			t.maxima[i] = maxRow(float32(math.Inf(-1)), out[i*n:(i+1)*n])
		}
	}
}

// keep leaves the maxima with buffer out for the ReduceMax and reports true; false for a nil tile.
func (t *rowMaxTile) keep(out *simplego.Buffer) bool {
	if t == nil {
		return false
	}
	if _, loaded := gemmMaxima.Swap(out, t); !loaded {
		maximaLive.Add(1)
	}
	fusedMaxCalls.Add(1)
	return true
}

var (
	fusedMaxCalls atomic.Int64 // DotGenerals and Adds that left their rows' maxima (tests)
	maximaLive    atomic.Int64 // gemmMaxima's entries
)

// dropMaxima forgets the maxima left with buffer b, if any.
func dropMaxima(b *simplego.Buffer) {
	if b != nil && maximaLive.Load() > 0 {
		if _, loaded := gemmMaxima.LoadAndDelete(b); loaded {
			maximaLive.Add(-1)
		}
	}
}

// takeFusedMax returns the ReduceMax node's result when the DotGeneral before left it.
func takeFusedMax(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer) (*simplego.Buffer, bool, error) {
	if len(inputs) != 1 {
		return nil, false, nil
	}
	v, found := gemmMaxima.Load(inputs[0])
	if !found || v.(*rowMaxTile).max != node {
		return nil, false, nil
	}
	dropMaxima(inputs[0])
	return reductionOf(backend, node, opReduceMax, v.(*rowMaxTile).maxima)
}
