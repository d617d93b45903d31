package fastgo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/fastgo"
)

// The element-wise executors are checked against GoMLX's own on random shapes (odd sizes,
// axes of size 1, broadcasting): the ops that only move values (Transpose, BroadcastInDim), the
// binary ops, ReduceMax and a ReduceSum that keeps GoMLX's summation order must agree bit for
// bit; Exp and the reordered sums within the bounds their tests state. The seed is printed;
// MHALAB_FASTGO_SEED=S replays one, MHALAB_FASTGO_CASES=N runs more cases (a soak).

func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(20261201)
	if s := os.Getenv("MHALAB_FASTGO_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MHALAB_FASTGO_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with MHALAB_FASTGO_SEED=%d)", seed, seed)
	return seed
}

// eachVec runs f once on each level of element-wise vector loops this CPU has (fastgo.VecLevels:
// AVX-512 and AVX2 where both run, so that an AVX-512 machine checks the AVX2 loops too), or
// once on plain Go where there are none.
func eachVec(t *testing.T, f func(t *testing.T)) {
	levels := fastgo.VecLevels()
	if len(levels) == 0 {
		f(t)
		return
	}
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			fastgo.SetVec(t, level)
			f(t)
		})
	}
}

func testCases(def int) int {
	if n, err := strconv.Atoi(os.Getenv("MHALAB_FASTGO_CASES")); err == nil && n > 0 {
		return n
	}
	return def
}

// maxTestElems bounds the elements of a random tensor (and of a Gather's output): a soak draws
// thousands of shapes, and rank-5 ones of 70s would take gigabytes.
const maxTestElems = 1 << 20

// shrink halves the largest of dims until their product is at most limit.
func shrink(dims []int, limit int) []int {
	for prodDims(dims) > limit {
		big := 0
		for i, d := range dims {
			if d > dims[big] {
				big = i
			}
		}
		dims[big] = (dims[big] + 1) / 2
	}
	return dims
}

// randomDims: rank dims, each 1, small odd, or up to 70, at most maxTestElems in all.
func randomDims(rng *rand.Rand, rank int) []int {
	dims := make([]int, rank)
	for i := range dims {
		switch rng.IntN(4) {
		case 0:
			dims[i] = 1
		case 1:
			dims[i] = []int{2, 3, 5, 7}[rng.IntN(4)]
		default:
			dims[i] = 1 + rng.IntN(70)
		}
	}
	return shrink(dims, maxTestElems)
}

// randomInput: a tensor of dtype with random values; floats get a few ±0, ±Inf and NaN when
// specials is set.
func randomInput(rng *rand.Rand, dtype dtypes.DType, dims []int, specials bool) *tensors.Tensor {
	n := prodDims(dims)
	special := func(i int) (float64, bool) {
		if !specials || rng.IntN(50) != 0 {
			return 0, false
		}
		return []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN()}[rng.IntN(5)], true
	}
	switch dtype {
	case dtypes.Float64:
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64() * 4
			if s, ok := special(i); ok {
				v[i] = s
			}
		}
		return tensors.FromFlatDataAndDimensions(v, dims...)
	case dtypes.Int32:
		v := make([]int32, n)
		for i := range v {
			v[i] = rng.Int32N(1000) - 500
		}
		return tensors.FromFlatDataAndDimensions(v, dims...)
	default:
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 4)
			if s, ok := special(i); ok {
				v[i] = float32(s)
			}
		}
		return tensors.FromFlatDataAndDimensions(v, dims...)
	}
}

// bits returns every element's bits for an exact comparison; every NaN is the same (x86 keeps
// one operand's payload and sign, and which one depends on the order the compiler chose).
func bits(t *tensors.Tensor) []uint64 {
	var out []uint64
	t.MustConstFlatData(func(flat any) {
		switch v := flat.(type) {
		case []float32:
			for _, x := range v {
				if x != x {
					x = float32(math.NaN())
				}
				out = append(out, uint64(math.Float32bits(x)))
			}
		case []float64:
			for _, x := range v {
				if x != x {
					x = math.NaN()
				}
				out = append(out, math.Float64bits(x))
			}
		case []int32:
			for _, x := range v {
				out = append(out, uint64(uint32(x)))
			}
		case []bool:
			for _, x := range v {
				if x {
					out = append(out, 1)
				} else {
					out = append(out, 0)
				}
			}
		}
	})
	return out
}

// execBoth runs fn with fastgo on and off and returns both outputs and how many nodes of opType
// fastgo computed with it on.
func execBoth(t *testing.T, backend backends.Backend, opType backends.OpType, fn func(in []*Node) *Node, inputs ...*tensors.Tensor) (fast, gomlx *tensors.Tensor, calls int64) {
	t.Helper()
	once := func(on bool) *tensors.Tensor {
		prev := fastgo.SetEnabled(on)
		defer fastgo.SetEnabled(prev)
		exec, err := NewExec(forFastgo(backend, on), fn)
		if err != nil {
			t.Fatalf("NewExec: %v", err)
		}
		defer exec.Finalize()
		outs, err := exec.Exec(argsFor(on, inputs...)...)
		if err != nil {
			t.Fatalf("Exec (fastgo %v): %v", on, err)
		}
		return outs[0]
	}
	before := fastgo.OpCalls(opType)
	fast = once(true)
	calls = fastgo.OpCalls(opType) - before
	gomlx = once(false)
	return fast, gomlx, calls
}

// sameBits fails unless a and b are equal bit for bit (shape and values).
func sameBits(t *testing.T, what string, a, b *tensors.Tensor) {
	t.Helper()
	if !a.Shape().Equal(b.Shape()) {
		t.Fatalf("%s: shape %s, GoMLX %s", what, a.Shape(), b.Shape())
	}
	x, y := bits(a), bits(b)
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("%s: element %d of %s: fastgo bits %#x, GoMLX %#x", what, i, a.Shape(), x[i], y[i])
		}
	}
}

func TestTransposeMatchesGoMLX(t *testing.T) { eachVec(t, testTransposeMatchesGoMLX) }

func testTransposeMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	var calls int64
	for c := range testCases(150) {
		rank := 1 + rng.IntN(5)
		dims := randomDims(rng, rank)
		perm := rng.Perm(rank)
		dtype := []dtypes.DType{dtypes.Float32, dtypes.Float64, dtypes.Int32}[rng.IntN(3)]
		x := randomInput(rng, dtype, dims, true)
		fast, gomlx, n := execBoth(t, backend, backends.OpTypeTranspose, func(in []*Node) *Node {
			return TransposeAllDims(in[0], perm...)
		}, x)
		calls += n
		sameBits(t, fmt.Sprintf("case %d: %s perm %v", c, x.Shape(), perm), fast, gomlx)
	}
	// Large enough for several goroutines and the tiled path: [2, 300, 7, 130] → [7, 130, 2, 300].
	x := randomInput(rng, dtypes.Float32, []int{2, 300, 7, 130}, false)
	fast, gomlx, n := execBoth(t, backend, backends.OpTypeTranspose, func(in []*Node) *Node {
		return TransposeAllDims(in[0], 2, 3, 0, 1)
	}, x)
	sameBits(t, "large", fast, gomlx)
	if calls+n == 0 {
		t.Fatalf("fastgo's Transpose never ran: the executor is not installed (%s)", fastgo.Status())
	}
}

// TestBroadcastInDimMatchesGoMLX: random operands broadcast into random larger shapes (new
// axes anywhere, size-1 axes grown), every dtype the executor handles.
func TestBroadcastInDimMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 2))
	var calls int64
	for c := range testCases(150) {
		outRank := 1 + rng.IntN(5)
		outDims := randomDims(rng, outRank)
		// The operand keeps a sorted subset of the output axes, some of them shrunk to 1.
		var axes, expanded, inDims []int
		for a := range outRank {
			if rng.IntN(3) == 0 {
				expanded = append(expanded, a)
			} else {
				axes = append(axes, a)
				d := outDims[a]
				if rng.IntN(3) == 0 {
					d = 1
				}
				inDims = append(inDims, d)
			}
		}
		dtype := []dtypes.DType{dtypes.Float32, dtypes.Float64, dtypes.Int32}[rng.IntN(3)]
		x := randomInput(rng, dtype, inDims, true)
		fast, gomlx, n := execBoth(t, backend, backends.OpTypeBroadcastInDim, func(in []*Node) *Node {
			return ExpandAndBroadcast(in[0], outDims, expanded) // BroadcastInDim along axes
		}, x)
		calls += n
		sameBits(t, fmt.Sprintf("case %d: %s into %v along %v", c, x.Shape(), outDims, axes), fast, gomlx)
	}
	if calls == 0 {
		t.Fatalf("fastgo's BroadcastInDim never ran: the executor is not installed (%s)", fastgo.Status())
	}
}

// binaryOps are the binary ops fastgo computes.
var binaryOps = []struct {
	name   string
	opType backends.OpType
	fn     func(a, b *Node) *Node
}{
	{"Add", backends.OpTypeAdd, Add}, {"Sub", backends.OpTypeSub, Sub}, {"Mul", backends.OpTypeMul, Mul},
	{"Div", backends.OpTypeDiv, Div}, {"Max", backends.OpTypeMax, Max}, {"Min", backends.OpTypeMin, Min},
}

// TestBinaryOpsMatchGoMLX: equal shapes, scalars on either side and broadcasting along axes of
// size 1 on either or both sides, float32 and float64 with ±0, ±Inf and NaN among the values.
func TestBinaryOpsMatchGoMLX(t *testing.T) { eachVec(t, testBinaryOpsMatchGoMLX) }

func testBinaryOpsMatchGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	for _, bop := range binaryOps {
		t.Run(bop.name, func(t *testing.T) {
			var calls int64
			for c := range testCases(60) {
				rank := 1 + rng.IntN(4)
				dims := randomDims(rng, rank)
				someOnes := func() []int {
					d := slices.Clone(dims)
					for a := range d {
						if rng.IntN(2) == 0 {
							d[a] = 1
						}
					}
					return d
				}
				var aDims, bDims []int
				switch rng.IntN(4) {
				case 0: // equal shapes
					aDims, bDims = dims, dims
				case 1: // scalar on the right
					aDims, bDims = dims, nil
				case 2: // scalar on the left
					aDims, bDims = nil, dims
				default: // broadcasting
					aDims, bDims = someOnes(), someOnes()
				}
				dtype := []dtypes.DType{dtypes.Float32, dtypes.Float64}[rng.IntN(2)]
				a, b := randomInput(rng, dtype, aDims, true), randomInput(rng, dtype, bDims, true)
				fast, gomlx, n := execBoth(t, backend, bop.opType, func(in []*Node) *Node { return bop.fn(in[0], in[1]) }, a, b)
				calls += n
				sameBits(t, fmt.Sprintf("case %d: %s %s %s", c, a.Shape(), bop.name, b.Shape()), fast, gomlx)
			}
			if calls == 0 {
				t.Fatalf("fastgo's %s never ran: the executor is not installed (%s)", bop.name, fastgo.Status())
			}
		})
	}
}

// TestReduceMatchesGoMLX: ReduceMax and ReduceSum over random contiguous blocks of axes (and a
// few non-contiguous sets, which fall back), with ±0, ±Inf and NaN among the values: equal bit
// for bit, except float32 sums, which fastgo adds in vector lanes: those are checked against
// GoMLX's sum of the values converted to float64 (exact but for the final rounding at these
// sizes), within (n+1)·2⁻²⁴·Σ|x| — the bound of any summation order — and with the same NaN and
// ±Inf.
func TestReduceMatchesGoMLX(t *testing.T) { eachVec(t, testReduceMatchesGoMLX) }

func testReduceMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 4))
	for _, red := range []struct {
		name   string
		opType backends.OpType
		fn     func(x *Node, axes ...int) *Node
	}{{"ReduceMax", backends.OpTypeReduceMax, ReduceMax}, {"ReduceSum", backends.OpTypeReduceSum, ReduceSum}} {
		t.Run(red.name, func(t *testing.T) {
			var calls int64
			for c := range testCases(100) {
				rank := 1 + rng.IntN(4)
				dims := randomDims(rng, rank)
				first := rng.IntN(rank)
				axes := identityAxes(first, 1+rng.IntN(rank-first))
				if rank >= 3 && rng.IntN(8) == 0 {
					axes = []int{0, rank - 1}
				}
				dtype := []dtypes.DType{dtypes.Float32, dtypes.Float64}[rng.IntN(2)]
				x := randomInput(rng, dtype, dims, rng.IntN(2) == 0)
				if c%10 == 0 { // long rows: the vector loop of ReduceMax
					dims = []int{3, 1000 + rng.IntN(100)}
					axes = []int{1}
					x = randomInput(rng, dtype, dims, c%20 == 0)
				}
				fast, gomlx, n := execBoth(t, backend, red.opType, func(in []*Node) *Node {
					return red.fn(in[0], axes...)
				}, x)
				calls += n
				what := fmt.Sprintf("case %d: %s of %s over %v", c, red.name, x.Shape(), axes)
				if red.opType == backends.OpTypeReduceSum && dtype == dtypes.Float32 {
					closeToSum(t, what, fast, x, axes)
					continue
				}
				sameBits(t, what, fast, gomlx)
			}
			if calls == 0 {
				t.Fatalf("fastgo's %s never ran: the executor is not installed (%s)", red.name, fastgo.Status())
			}
		})
	}
}

// closeToSum checks fast, a float32 ReduceSum of x over axes, against GoMLX's float64 sums of x
// and of |x| (fastgo off): |fast − Σx| ≤ (n+1)·2⁻²⁴·Σ|x| with n the terms per output, and the
// same NaN and ±Inf where Σx is not finite.
func closeToSum(t *testing.T, what string, fast, x *tensors.Tensor, axes []int) {
	t.Helper()
	prev := fastgo.SetEnabled(false)
	defer fastgo.SetEnabled(prev)
	outs := MustExecOnceN(refBackend(), func(x *Node) (*Node, *Node) {
		x64 := ConvertDType(x, dtypes.Float64)
		return ReduceSum(x64, axes...), ReduceSum(Abs(x64), axes...)
	}, localCopy(x))
	terms := 1
	for _, a := range axes {
		terms *= x.Shape().Dim(a)
	}
	exact, bound := flat64(outs[0]), flat64(outs[1])
	for i, v64 := range flat64(fast) {
		v, want := float32(v64), exact[i]
		switch {
		case math.IsNaN(want) || math.IsInf(want, 0) || math.IsInf(float64(v), 0):
			if !(math.IsNaN(want) && v != v) && float64(v) != want {
				t.Fatalf("%s: element %d: fastgo %v, float64 sum %v", what, i, v, want)
			}
		case math.Abs(float64(v)-want) > float64(terms+1)*0x1p-24*bound[i]:
			t.Fatalf("%s: element %d: fastgo %v, float64 sum %v: error %.3g above %d·2⁻²⁴·Σ|x| = %.3g",
				what, i, v, want, math.Abs(float64(v)-want), terms+1, float64(terms+1)*0x1p-24*bound[i])
		}
	}
}

func identityAxes(first, n int) []int {
	axes := make([]int, n)
	for i := range axes {
		axes[i] = first + i
	}
	return axes
}

// TestExpMatchesGoMLX: Exp over the whole float32 range that matters (−110 … 90, where it
// underflows through the subnormals and overflows), special values, and float64. GoMLX computes
// float32(math.Exp(float64(x))), correctly rounded but for rare ties; fastgo's float32 loop is
// within 2 ulp of it (1 ulp expected; in the subnormal range 2 units of the smallest
// subnormal), float64 is GoMLX's own formula (equal bit for bit).
func TestExpMatchesGoMLX(t *testing.T) { eachVec(t, testExpMatchesGoMLX) }

func testExpMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 5))
	var calls int64
	for c := range testCases(40) {
		dims := randomDims(rng, 1+rng.IntN(3))
		if c%4 == 0 {
			dims = []int{40000 + rng.IntN(3000)} // several goroutines
		}
		n := prodDims(dims)
		v := make([]float32, n)
		for i := range v {
			switch rng.IntN(40) {
			case 0:
				v[i] = []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
					88.72283, 88.72284, -87.33655, -103.27893, -103.97208, -104}[rng.IntN(11)]
			default:
				v[i] = float32(rng.Float64()*200 - 110)
			}
		}
		x := tensors.FromFlatDataAndDimensions(v, dims...)
		fast, gomlx, k := execBoth(t, backend, backends.OpTypeExp, func(in []*Node) *Node { return Exp(in[0]) }, x)
		calls += k
		fb, gb := bits(fast), bits(gomlx)
		for i := range fb {
			f, g := math.Float32frombits(uint32(fb[i])), math.Float32frombits(uint32(gb[i]))
			if !expClose(f, g) {
				t.Fatalf("case %d: exp(%g) = %g (bits %#x), GoMLX %g (bits %#x)", c, v[i], f, fb[i], g, gb[i])
			}
		}
		// float64: the same values bit for bit.
		x64 := randomInput(rng, dtypes.Float64, dims, true)
		fast, gomlx, k = execBoth(t, backend, backends.OpTypeExp, func(in []*Node) *Node { return Exp(in[0]) }, x64)
		calls += k
		sameBits(t, fmt.Sprintf("case %d float64 %s", c, x64.Shape()), fast, gomlx)
	}
	if calls == 0 {
		t.Fatalf("fastgo's Exp never ran: the executor is not installed (%s)", fastgo.Status())
	}
}

// expClose: equal, both NaN, or within 2 ulp of g (2 smallest subnormals below the normal range).
func expClose(f, g float32) bool {
	if f == g || (f != f && g != g) {
		return true
	}
	if math.IsInf(float64(f), 0) || math.IsInf(float64(g), 0) || f != f || g != g {
		return false
	}
	ulp := float64(math.Nextafter32(g, float32(math.Inf(1))) - g)
	if g < 0x1p-126 {
		ulp = 0x1p-149
	}
	return math.Abs(float64(f)-float64(g)) <= 2*ulp
}

// TestGatherMatchesGoMLX: Gather(x, indices [N…, 1]) of whole slices along axis 0 — mhalib's
// slicing on the pure-Go backend — with int32 and int64 indices, some out of range (clamped),
// and gathers of two axes at once (which fall back to GoMLX).
func TestGatherMatchesGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 7))
	var calls int64
	for c := range testCases(100) {
		dims := randomDims(rng, 1+rng.IntN(4))
		dtype := []dtypes.DType{dtypes.Float32, dtypes.Float64, dtypes.Int32}[rng.IntN(3)]
		x := randomInput(rng, dtype, dims, true)
		// (simplego's Gather rejects indices of higher rank than the operand.)
		idxDims := append(randomDims(rng, rng.IntN(len(dims))), 1)
		// The output is [index batch…, dims[1:]…]: keep it within maxTestElems too.
		shrink(idxDims[:len(idxDims)-1], max(1, maxTestElems/prodDims(dims[1:])))
		pairs := rank2Gather(rng, dims)
		if pairs {
			idxDims[len(idxDims)-1] = 2
		}
		n := prodDims(idxDims)
		var idx *tensors.Tensor
		pick := func(axis int) int64 { return int64(rng.IntN(dims[axis]+2)) - 1 } // −1 … dim: some clamped
		if rng.IntN(2) == 0 {
			v := make([]int32, n)
			for i := range v {
				v[i] = int32(pick(i % idxDims[len(idxDims)-1]))
			}
			idx = tensors.FromFlatDataAndDimensions(v, idxDims...)
		} else {
			v := make([]int64, n)
			for i := range v {
				v[i] = pick(i % idxDims[len(idxDims)-1])
			}
			idx = tensors.FromFlatDataAndDimensions(v, idxDims...)
		}
		fast, gomlx, k := execBoth(t, backend, backends.OpTypeGather, func(in []*Node) *Node { return Gather(in[0], in[1]) }, x, idx)
		calls += k
		sameBits(t, fmt.Sprintf("case %d: Gather(%s, %s)", c, x.Shape(), idx.Shape()), fast, gomlx)
	}
	if calls == 0 {
		t.Fatalf("fastgo's Gather never ran: the executor is not installed (%s)", fastgo.Status())
	}
}

// rank2Gather: whether this case gathers along two axes at once (only for rank ≥ 2).
func rank2Gather(rng *rand.Rand, dims []int) bool { return len(dims) >= 2 && rng.IntN(5) == 0 }

// TestSelectOpsMatchGoMLX: IsFinite (float32/float64 with ±0, ±Inf, NaN), Where with branches of
// the output's shape or scalars (several dtypes; parameters, or computed branches that Where may
// write into; conditions mostly true, even, mostly false), and Identity (a copy of a parameter).
func TestSelectOpsMatchGoMLX(t *testing.T) {
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 8))
	calls := map[backends.OpType]int64{}
	for c := range testCases(80) {
		dims := randomDims(rng, 1+rng.IntN(4))
		if c%10 == 0 {
			dims = []int{3, 20000 + rng.IntN(100)} // several goroutines
		}
		dtype := []dtypes.DType{dtypes.Float32, dtypes.Float64, dtypes.Int32}[rng.IntN(3)]
		fdtype := []dtypes.DType{dtypes.Float32, dtypes.Float64}[rng.IntN(2)]
		x := randomInput(rng, fdtype, dims, true)
		fast, gomlx, k := execBoth(t, backend, backends.OpTypeIsFinite, func(in []*Node) *Node { return IsFinite(in[0]) }, x)
		calls[backends.OpTypeIsFinite] += k
		sameBits(t, fmt.Sprintf("case %d: IsFinite(%s)", c, x.Shape()), fast, gomlx)

		cond := randomInput(rng, dtypes.Float32, dims, false)
		a, b := randomInput(rng, dtype, dims, true), randomInput(rng, dtype, dims, true)
		scalarA, scalarB := rng.IntN(4) == 0, rng.IntN(4) == 0
		if scalarA {
			a = randomInput(rng, dtype, nil, false)
		}
		if scalarB && !scalarA {
			b = randomInput(rng, dtype, nil, false)
		}
		// The threshold makes the condition mostly true, even or mostly false; computed branches
		// (Neg) are handed over to Where, which then writes into one of them.
		threshold, computed := []float64{-6, 0, 6}[rng.IntN(3)], rng.IntN(2) == 0
		fast, gomlx, k = execBoth(t, backend, backends.OpTypeWhere, func(in []*Node) *Node {
			onTrue, onFalse := in[1], in[2]
			if computed {
				onTrue, onFalse = Neg(onTrue), Neg(onFalse)
			}
			return Where(GreaterThan(in[0], Scalar(in[0].Graph(), in[0].DType(), threshold)), onTrue, onFalse)
		}, cond, a, b)
		calls[backends.OpTypeWhere] += k
		sameBits(t, fmt.Sprintf("case %d: Where(%s > %g, %s, %s), computed branches %v", c, cond.Shape(), threshold, a.Shape(), b.Shape(), computed), fast, gomlx)

		y := randomInput(rng, dtype, dims, true)
		fast, gomlx, k = execBoth(t, backend, backends.OpTypeIdentity, func(in []*Node) *Node { return Identity(in[0]) }, y)
		calls[backends.OpTypeIdentity] += k
		sameBits(t, fmt.Sprintf("case %d: Identity(%s)", c, y.Shape()), fast, gomlx)
	}
	for _, op := range []backends.OpType{backends.OpTypeIsFinite, backends.OpTypeWhere, backends.OpTypeIdentity} {
		if calls[op] == 0 {
			t.Errorf("fastgo's %s never ran: the executor is not installed (%s)", op, fastgo.Status())
		}
	}
}
