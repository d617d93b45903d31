package fastgo_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/mhalib"
)

// TestFusedSoftmaxPasses runs softmax's pieces as flashrows writes them — scores s = q·kᵀ
// [B, h, rows, cols], m = ReduceMax(s) [B, h, rows, 1], e = Exp(Sub(s, m)), then ReduceSum(e) and
// e·v — with fuse.go's fusions (the GEMM takes the rows' maxima; Sub, Exp and ReduceSum in one
// pass), with every executor apart, and with GoMLX's kernels. Fused and apart must be equal bit
// for bit (the same maxRow, vector subtraction, exp and row sums on the same rows); against
// GoMLX, the products and sums run in other orders and exp differs by ≤ 2 ulp: within
// 8·(k+1)·u·max|gomlx|, k = cols. A graph whose Sub has a second use (returned as well) must not
// fuse the Sub and still be right.
func TestFusedSoftmaxPasses(t *testing.T) { eachVec(t, testFusedSoftmaxPasses) }

func testFusedSoftmaxPasses(t *testing.T) {
	skipWithoutFusing(t)
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 29))
	const B, H, rows, cols, dk, dv = 1, 3, 37 * 37, 70, 24, 16 // 3·1369·70 scores: above fuseMinElems
	q := randomTensor(rng, dtypes.Float32, []int{B, H, rows, dk})
	k := randomTensor(rng, dtypes.Float32, []int{B, H, cols, dk})
	v := randomTensor(rng, dtypes.Float32, []int{B, H, cols, dv})
	for _, c := range []struct {
		name            string
		returnSub       bool // the Sub is an output too: two uses, the Sub not fused
		fusedSub, maxes int64
	}{
		{"fused", false, 1, 1},
		{"sub_used_twice", true, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(fast, fuse bool) (outs []*tensors.Tensor, subs, maxes int64) {
				prevOn, prevFuse := fastgo.SetEnabled(fast), fastgo.SetFuse(fuse)
				defer func() { fastgo.SetEnabled(prevOn); fastgo.SetFuse(prevFuse) }()
				exec := MustNewExec(forFastgo(backend, fast), func(q, k, v *Node) []*Node {
					s := DotGeneral(q, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}) // [B, H, rows, cols]
					m := StopGradient(ReduceAndKeep(s, ReduceMax, -1))                  // [B, H, rows, 1]
					d := Sub(s, m)                                                      // [B, H, rows, cols]
					e := Exp(d)
					l := ReduceAndKeep(e, ReduceSum, -1)                                 // [B, H, rows, 1]
					pv := DotGeneral(e, []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1}) // [B, H, rows, dv]
					outs := []*Node{e, l, pv, m}
					if c.returnSub {
						outs = append(outs, d)
					}
					return outs
				})
				subs0, maxes0 := fastgo.FusedCalls.Load(), fastgo.FusedMaxCalls.Load()
				outs = exec.MustExec(argsFor(fast, q, k, v)...)
				return outs, fastgo.FusedCalls.Load() - subs0, fastgo.FusedMaxCalls.Load() - maxes0
			}
			fused, subs, maxes := run(true, true)
			if subs != c.fusedSub || maxes != c.maxes {
				t.Fatalf("fused Subs %d, GEMMs with maxima %d; want %d, %d", subs, maxes, c.fusedSub, c.maxes)
			}
			apart, subs, maxes := run(true, false)
			if subs != 0 || maxes != 0 {
				t.Fatalf("fusing off: fused Subs %d, GEMMs with maxima %d", subs, maxes)
			}
			gomlx, _, _ := run(false, false)
			for i, name := range []string{"exp", "sum", "e·v", "max"} {
				f, a, g := flat32(t, fused[i]), flat32(t, apart[i]), flat32(t, gomlx[i])
				biggest := 0.0
				for _, x := range g {
					biggest = max(biggest, math.Abs(float64(x)))
				}
				bound := 8 * float64(cols+1) * 0x1p-24 * biggest
				for j := range f {
					if math.Float32bits(f[j]) != math.Float32bits(a[j]) {
						t.Fatalf("%s[%d]: fused %g, apart %g (want equal bits)", name, j, f[j], a[j])
					}
					if diff := math.Abs(float64(f[j]) - float64(g[j])); !(diff <= bound) {
						t.Fatalf("%s[%d]: fused %g, GoMLX %g: |Δ| %.3g > %.3g", name, j, f[j], g[j], diff, bound)
					}
				}
			}
		})
	}
}

func flat32(t *testing.T, x *tensors.Tensor) []float32 {
	t.Helper()
	var out []float32
	tensors.ConstFlatData(x, func(flat []float32) { out = append(out, flat...) })
	return out
}

// BenchmarkSoftmaxPasses times flashrows' weighing of one tile of causal L4096's scores
// ([1, 8, 512, 512]: m = ReduceMax, e = Exp(Sub(s, m)), ReduceSum(e), e·v) with fuse.go's one
// pass and with the three executors apart, on each level of vector loops the CPU has and on
// plain Go (go/apart: nothing fuses there), interleaved in one process.
func BenchmarkSoftmaxPasses(b *testing.B) {
	backend := newBackend(b)
	rng := rand.New(rand.NewPCG(1, 2))
	s := randomTensor(rng, dtypes.Float32, []int{1, 8, 512, 512})
	v := randomTensor(rng, dtypes.Float32, []int{512, 1, 8, 64})
	exec := MustNewExec(backend, func(s, v *Node) []*Node {
		m := StopGradient(ReduceAndKeep(s, ReduceMax, -1))                   // [1, 8, 512, 1]
		e := Exp(Sub(s, m))                                                  // [1, 8, 512, 512]
		l := ReduceAndKeep(e, ReduceSum, -1)                                 // [1, 8, 512, 1]
		pv := DotGeneral(e, []int{3}, []int{0, 1}, v, []int{0}, []int{1, 2}) // [1, 8, 512, 64]
		return []*Node{Div(pv, l)}
	})
	for _, level := range append(fastgo.VecLevels(), "go") {
		for _, fuse := range []bool{true, false} {
			if level == "go" && fuse {
				continue
			}
			name := level + "/" + map[bool]string{true: "fused", false: "apart"}[fuse]
			b.Run(name, func(b *testing.B) {
				fastgo.SetVec(b, level)
				prev := fastgo.SetFuse(fuse)
				defer fastgo.SetFuse(prev)
				exec.MustExec(s, v)[0].FinalizeAll()
				start := cpuMS()
				for b.Loop() {
					exec.MustExec(s, v)[0].FinalizeAll()
				}
				reportCPU(b, start)
			})
		}
	}
}

// TestFusedInFlashRows checks that mhalib's causal flash on this backend (flashrows) is the
// graph fuse.go fuses: at L 1024, h 4, blocks of 512 rows (tiles of 4·512·512 scores, the
// diagonal's groups 4·256·256 and 4·256·512), one fused Sub per tile, each leaving e to the
// product that weighs the values.
func TestFusedInFlashRows(t *testing.T) { eachVec(t, testFusedInFlashRows) }

func testFusedInFlashRows(t *testing.T) {
	skipWithoutFusing(t)
	backend := newBackend(t)
	ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
	exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) *Node {
		return mhalib.MultiHeadAttention(ctx, x, x, x, 4).Causal(mhalib.CausalTopLeft).Formulation(mhalib.Flash).
			FlashBlockSizes(512, 512).Done() // [1, 1024, 64]
	})
	x := randomTensor(rand.New(rand.NewPCG(1, 2)), dtypes.Float32, []int{1, 1024, 64})
	before, maxesBefore, deferredBefore := fastgo.FusedCalls.Load(), fastgo.FusedMaxCalls.Load(), fastgo.DeferredCalls.Load()
	exec.MustExec(x)[0].FinalizeAll()
	n := fastgo.FusedCalls.Load() - before
	if d := fastgo.DeferredCalls.Load() - deferredBefore; d != n {
		t.Errorf("fused Subs that left e to the product in causal flash at L 1024: %d of %d, want all (flashrows builds e·v before the sum: fuse_expdot.go)", d, n)
	}
	if n < 2 {
		t.Errorf("fused Subs in causal flash at L 1024: %d, want ≥ 2 (one per tile of scores)", n)
	}
	if maxes := fastgo.FusedMaxCalls.Load() - maxesBefore; maxes < 1 {
		t.Errorf("GEMMs that took their rows' maxima in causal flash at L 1024: %d, want ≥ 1 (the tile left of the diagonal)", maxes)
	}
}

// TestExpInsideProductInMHA checks that mhalib's plain attention (softmaxSum: e·v before the
// sum, e through the Identity of its custom gradient) is a graph whose product makes e
// (fuse_expdot.go), causal or not.
func TestExpInsideProductInMHA(t *testing.T) { eachVec(t, testExpInsideProductInMHA) }

func testExpInsideProductInMHA(t *testing.T) {
	skipWithoutFusing(t)
	backend := newBackend(t)
	for _, causal := range []mhalib.Causal{mhalib.NoCausal, mhalib.CausalTopLeft} {
		ctx := mhalib.WithInit(context.New(), mhalib.InitXavierUniform)
		exec := context.MustNewExec(backend, ctx, func(ctx *context.Context, x *Node) *Node {
			return mhalib.MultiHeadAttention(ctx, x, x, x, 4).Causal(causal).Formulation(mhalib.HeadParallel).Done() // [4, 256, 64]
		})
		x := randomTensor(rand.New(rand.NewPCG(1, 2)), dtypes.Float32, []int{4, 256, 64}) // 4·4·256·256 scores
		before := fastgo.DeferredCalls.Load()
		exec.MustExec(x)[0].FinalizeAll()
		if d := fastgo.DeferredCalls.Load() - before; d != 1 {
			t.Errorf("causal %v: Subs that left e to the product: %d, want 1", causal, d)
		}
	}
}

// skipWithoutFusing skips t where nothing fuses: fastgo built without GOEXPERIMENT=simd, or a
// CPU with neither AVX-512 nor AVX2 and FMA (the fused passes call the vector loops).
func skipWithoutFusing(t *testing.T) {
	t.Helper()
	if !fastgo.SIMD() || len(fastgo.VecLevels()) == 0 {
		t.Skip("fusing needs the vector loops (fastgo built without GOEXPERIMENT=simd, or a CPU with neither AVX-512 nor AVX2 and FMA)")
	}
}
