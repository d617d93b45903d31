package fastgo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/mhalib"
)

func simplegoWith(t *testing.T, config string) backends.Backend {
	t.Helper()
	b, err := simplego.New(config)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rowsOf is x[from : from+n] along axis 0 as mhalib's flash takes it: a Gather of consecutive
// rows, its indices computed when the graph runs (+ 0·dep, a scalar).
func rowsOf(x *Node, from, n int, dep *Node) *Node {
	idx := make([][]int32, n)
	for i := range idx {
		idx[i] = []int32{int32(from + i)}
	}
	indices := Const(x.Graph(), idx) // [n, 1]
	zero := ConvertDType(MulScalar(dep, 0), dtypes.Int32)
	return Gather(x, Add(indices, BroadcastToDims(zero, n, 1))) // [n, x's other axes…]
}

// sameBits32 fails unless a and b hold the same bits.
func sameBits32(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values, want %d", what, len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s[%d]: %g, want %g (the same bits)", what, i, a[i], b[i])
		}
	}
}

// lazyRun runs an execution and returns its outputs' values and how many Gathers went lazy.
func lazyRun(exec func() []*tensors.Tensor) ([][]float32, int64) {
	calls0 := fastgo.RowViewCalls.Load()
	var out [][]float32
	for _, o := range exec() {
		out = append(out, tensors.MustCopyFlatData[float32](o))
	}
	return out, fastgo.RowViewCalls.Load() - calls0
}

// TestRowViews checks when a Gather of consecutive rows leaves them in place for the products
// that read it (gatherview.go) and that the results are those of the copies bit for bit: on a
// sequential backend, with the source read again by a node after the products (views), and in
// each case that must copy: the source's last use before a product, that later use not reaching
// an output, a reader that is not a DotGeneral, the rows an output of the graph, a backend
// that may run ops in parallel (skipped under -race, where GoMLX's parallel executor races).
func TestRowViews(t *testing.T) {
	const L, B, h, d = 96, 2, 3, 8
	rng := rand.New(rand.NewPCG(7, 29))
	data := make([]float32, L*B*h*d)
	for i := range data {
		data[i] = float32(rng.NormFloat64())
	}
	for _, c := range []struct {
		name   string
		config string
		views  int64 // lazy Gathers per run
		build  func(x, w *Node) []*Node
	}{
		{"a parameter's last use", "ops_sequential", 1, func(x, w *Node) []*Node {
			a := rowsOf(x, 8, 16, ReduceAllSum(w)) // x not donated: simplego never releases it
			filler := MulScalar(w, 3)
			return []*Node{DotGeneral(a, []int{3}, []int{1, 2}, w, []int{2}, []int{0, 1}), filler}
		}},
		{"a donated parameter's last use", "ops_sequential", 0, func(x, w *Node) []*Node {
			a := rowsOf(x, 8, 16, ReduceAllSum(w)) // x released after this Gather
			// x's shape: simplego gives this op x's released buffer
			filler := MulScalar(BroadcastToDims(ReduceAllSum(w), x.Shape().Dimensions...), 3)
			return []*Node{DotGeneral(a, []int{3}, []int{1, 2}, w, []int{2}, []int{0, 1}), filler}
		}},
		{"read again later", "ops_sequential", 2, func(x, w *Node) []*Node {
			src := AddScalar(x, 1) // [L, B, h, d], an intermediate
			a := rowsOf(src, 8, 16, ReduceAllSum(w))
			b := rowsOf(src, 40, 32, ReduceAllSum(w))
			p := DotGeneral(a, []int{3}, []int{1, 2}, w, []int{2}, []int{0, 1}) // [B, h, 16, 5]
			q := DotGeneral(b, []int{3}, []int{1, 2}, a, []int{3}, []int{1, 2}) // [B, h, 32, 16]
			later := ReduceAllSum(src)                                          // the source read after both
			return []*Node{p, q, later}
		}},
		{"last use before the product", "ops_sequential", 0, func(x, w *Node) []*Node {
			src := AddScalar(x, 1)
			a := rowsOf(src, 8, 16, ReduceAllSum(w))
			// src's buffer, released after the Gather, is the one simplego gives this op next
			filler := MulScalar(x, 3) // [L, B, h, d]
			return []*Node{DotGeneral(a, []int{3}, []int{1, 2}, w, []int{2}, []int{0, 1}), filler}
		}},
		{"later use unused", "ops_sequential", 0, func(x, w *Node) []*Node {
			src := AddScalar(x, 1)
			a := rowsOf(src, 8, 16, ReduceAllSum(w))
			p := DotGeneral(a, []int{3}, []int{1, 2}, w, []int{2}, []int{0, 1})
			_ = ReduceAllSum(src) // reaches no output: simplego never runs it
			return []*Node{p}
		}},
		{"another reader", "ops_sequential", 0, func(x, w *Node) []*Node {
			src := AddScalar(x, 1)
			a := rowsOf(src, 8, 16, ReduceAllSum(w))
			p := DotGeneral(a, []int{3}, []int{1, 2}, w, []int{2}, []int{0, 1})
			return []*Node{p, ReduceAllSum(a), ReduceAllSum(src)}
		}},
		{"an output", "ops_sequential", 0, func(x, w *Node) []*Node {
			src := AddScalar(x, 1)
			a := rowsOf(src, 8, 16, ReduceAllSum(w))
			p := DotGeneral(a, []int{3}, []int{1, 2}, w, []int{2}, []int{0, 1})
			return []*Node{p, a, ReduceAllSum(src)}
		}},
		{"parallel ops", "ops_parallel", 0, func(x, w *Node) []*Node {
			src := AddScalar(x, 1)
			a := rowsOf(src, 8, 16, ReduceAllSum(w))
			p := DotGeneral(a, []int{3}, []int{1, 2}, w, []int{2}, []int{0, 1})
			return []*Node{p, ReduceAllSum(src)}
		}},
		{"GoMLX's default", "", 0, func(x, w *Node) []*Node { // parallel when it runs alone
			src := AddScalar(x, 1)
			a := rowsOf(src, 8, 16, ReduceAllSum(w))
			p := DotGeneral(a, []int{3}, []int{1, 2}, w, []int{2}, []int{0, 1})
			return []*Node{p, ReduceAllSum(src)}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.config != "ops_sequential" && testBackendConfig != "" {
				t.Skip("under -race: GoMLX's parallel executor races by itself (backend_race_test.go)")
			}
			backend := simplegoWith(t, c.config)
			x := tensors.FromFlatDataAndDimensions(data, L, B, h, d)
			w := tensors.FromFlatDataAndDimensions(data[:B*h*d*5], B, h, d, 5)
			run := func(views bool) (out [][]float32, lazy, reads int64) {
				defer fastgo.SetRowViews(fastgo.SetRowViews(views))
				exec := MustNewExec(backend, c.build)
				defer exec.Finalize()
				for range 2 { // the second run reuses the first one's buffers
					calls0, reads0 := fastgo.RowViewCalls.Load(), fastgo.RowViewReads.Load()
					var xArg any = x
					if c.name == "a donated parameter's last use" { // the execution owns x's buffer
						clone, err := x.LocalClone()
						if err == nil {
							xArg, err = DonateTensorBuffer(clone, backend, 0)
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					outs := exec.MustExec(xArg, w)
					lazy, reads = fastgo.RowViewCalls.Load()-calls0, fastgo.RowViewReads.Load()-reads0
					out = out[:0]
					for _, o := range outs {
						out = append(out, tensors.MustCopyFlatData[float32](o))
					}
				}
				return out, lazy, reads
			}
			copied, _, _ := run(false)
			got, lazy, reads := run(true)
			if lazy != c.views || reads < lazy {
				t.Errorf("%d lazy Gathers (%d products read them) a run, want %d", lazy, reads, c.views)
			}
			for i := range copied {
				sameBits32(t, "output", got[i], copied[i])
			}
		})
	}
}

// TestRowViewsMHA: MultiHeadAttention's causal flash on the pure-Go backend as mhalab runs it
// (xla.New's "ops_sequential") takes its blocks as views, and its output and the gradients of
// the input and the weights are the same bits as with every block copied.
func TestRowViewsMHA(t *testing.T) {
	for _, grad := range []bool{false, true} {
		t.Run(map[bool]string{false: "forward", true: "gradient"}[grad], func(t *testing.T) { testRowViewsMHA(t, grad) })
	}
}

func testRowViewsMHA(t *testing.T, grad bool) {
	backend := simplegoWith(t, "ops_sequential")
	x := randomTensor(rand.New(rand.NewPCG(3, 4)), dtypes.Float32, []int{2, 512, 64})
	run := func(views bool) ([][]float32, int64) {
		defer fastgo.SetRowViews(fastgo.SetRowViews(views))
		ctx := context.New()
		ctx.SetParam(context.ParamInitialSeed, int64(5)) // the same weights in both runs
		ctx = mhalib.WithInit(ctx, mhalib.InitXavierUniform)
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) []*Node {
			y := mhalib.MultiHeadAttention(ctx, x, x, x, 4).Causal(mhalib.CausalTopLeft).Formulation(mhalib.Flash).Done() // [B, L, E]
			w := ctx.In(mhalib.DefaultScope).GetVariableByScopeAndName(ctx.In(mhalib.DefaultScope).Scope(), mhalib.VarInProjWeight)
			if !grad {
				return []*Node{y}
			}
			loss := ReduceAllSum(Mul(y, y))
			return append([]*Node{y}, Gradient(loss, x, w.ValueGraph(x.Graph()))...)
		})
		defer exec.Finalize()
		return lazyRun(func() []*tensors.Tensor { return exec.MustExec(x) })
	}
	copied, _ := run(false)
	got, lazy := run(true)
	if lazy == 0 {
		t.Error("no Gather went lazy in causal flash attention")
	}
	t.Logf("%d lazy Gathers", lazy)
	for i, name := range []string{"output", "dx", "d in_proj_weight"}[:len(got)] {
		sameBits32(t, name, got[i], copied[i])
	}
}

// TestRowViewsFlash: FlashAttention without a mask, causal, and causal with a sliding window
// (the shapes of flash by query blocks: blocks, chunks, the window's strip) gives the same bits
// with its blocks read in place as copied.
func TestRowViewsFlash(t *testing.T) {
	backend := simplegoWith(t, "ops_sequential")
	rng := rand.New(rand.NewPCG(8, 9))
	q, k, v := randomTensor(rng, dtypes.Float32, []int{2, 3, 1024, 16}), randomTensor(rng, dtypes.Float32, []int{2, 3, 1024, 16}), randomTensor(rng, dtypes.Float32, []int{2, 3, 1024, 16})
	for _, c := range []struct {
		name   string
		causal mhalib.Causal
		window int
	}{{"plain", mhalib.NoCausal, 0}, {"causal", mhalib.CausalTopLeft, 0}, {"window 200", mhalib.CausalTopLeft, 200}} {
		t.Run(c.name, func(t *testing.T) {
			run := func(views bool) ([][]float32, int64) {
				defer fastgo.SetRowViews(fastgo.SetRowViews(views))
				exec := MustNewExec(backend, func(q, k, v *Node) *Node {
					f := mhalib.FlashAttention(q, k, v).Causal(c.causal)
					if c.window > 0 {
						f.Window(c.window, 0, mhalib.AlignTopLeft)
					}
					return f.Done() // [B, h, L, dv]
				})
				defer exec.Finalize()
				return lazyRun(func() []*tensors.Tensor { return []*tensors.Tensor{exec.MustExec(q, k, v)[0]} })
			}
			copied, _ := run(false)
			got, lazy := run(true)
			if lazy == 0 {
				t.Error("no Gather went lazy")
			}
			sameBits32(t, "output", got[0], copied[0])
		})
	}
}

// TestRowViewsRandom draws FlashAttention configurations (batch, heads, length, head width,
// no mask / causal / a sliding window, block sizes, with or without the gradient of q, k and
// v; every third one MultiHeadAttention's flash, plain or causal) and checks that reading the blocks in place gives the bits of the copies. The seed is
// printed; MHALAB_FASTGO_SEED=S replays it, MHALAB_FASTGO_CASES=N draws more (a soak).
func TestRowViewsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 41))
	backend := simplegoWith(t, "ops_sequential")
	var lazyTotal int64
	for c := range testCases(12) {
		B, h, L, dk := 1+rng.IntN(3), 1+rng.IntN(4), 32+rng.IntN(1100), []int{8, 16, 64}[rng.IntN(3)]
		mode, blockQ := rng.IntN(3), []int{32, 64, 128, 256}[rng.IntN(4)]
		window, grad := 8+rng.IntN(L), rng.IntN(3) == 0
		name := fmt.Sprintf("case %d: B%d h%d L%d dk%d mode %d blockQ %d window %d grad %v", c, B, h, L, dk, mode, blockQ, window, grad)
		q, k, v := randomTensor(rng, dtypes.Float32, []int{B, h, L, dk}), randomTensor(rng, dtypes.Float32, []int{B, h, L, dk}), randomTensor(rng, dtypes.Float32, []int{B, h, L, dk})
		mha := c%3 == 2 // MultiHeadAttention's flash on x [B, L, h·dk] (fused projection weight)
		if mha {
			name += " (MultiHeadAttention)"
			q = randomTensor(rng, dtypes.Float32, []int{B, L, h * dk})
		}
		run := func(views bool) ([][]float32, int64) {
			defer fastgo.SetRowViews(fastgo.SetRowViews(views))
			if mha {
				ctx := context.New()
				ctx.SetParam(context.ParamInitialSeed, int64(c))
				exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) []*Node {
					b := mhalib.MultiHeadAttention(ctx, x, x, x, h).Formulation(mhalib.Flash).FlashBlockSizes(blockQ, 128)
					if mode > 0 {
						b.Causal(mhalib.CausalTopLeft)
					}
					out := b.Done() // [B, L, h·dk]
					if !grad {
						return []*Node{out}
					}
					return append([]*Node{out}, Gradient(ReduceAllSum(Mul(out, out)), x)...)
				})
				defer exec.Finalize()
				return lazyRun(func() []*tensors.Tensor { return exec.MustExec(q) })
			}
			exec := MustNewExec(backend, func(q, k, v *Node) []*Node {
				f := mhalib.FlashAttention(q, k, v).BlockSizes(blockQ, 128)
				switch mode {
				case 1:
					f.Causal(mhalib.CausalTopLeft)
				case 2:
					f.Causal(mhalib.CausalTopLeft).Window(window, 0, mhalib.AlignTopLeft)
				}
				out := f.Done() // [B, h, L, dk]
				if !grad {
					return []*Node{out}
				}
				return append([]*Node{out}, Gradient(ReduceAllSum(Mul(out, out)), q, k, v)...)
			})
			defer exec.Finalize()
			return lazyRun(func() []*tensors.Tensor { return exec.MustExec(q, k, v) })
		}
		copied, _ := run(false)
		got, lazy := run(true)
		lazyTotal += lazy
		for i := range copied {
			sameBits32(t, fmt.Sprintf("%s: output %d", name, i), got[i], copied[i])
		}
	}
	if lazyTotal == 0 {
		t.Error("no Gather went lazy in any configuration")
	}
	t.Logf("%d lazy Gathers", lazyTotal)
}
