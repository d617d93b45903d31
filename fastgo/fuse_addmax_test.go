package fastgo_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/mhalab/mhalab/fastgo"
)

// TestFusedBiasMax runs plain causal attention's softmax as mhalib writes it on this backend —
// scores s = q·kᵀ [B, H, rows, cols] plus a bias of 0 and −inf (causal, some pairs blocked at
// random, one row blocked whole), m = ReduceMax over the keys, e = exp(s − m) — with the Add
// taking the rows' maxima (fuse_addmax.go), with every executor apart, and with GoMLX's
// kernels. Fused and apart must be equal bit for bit; against GoMLX, the products run in other
// orders and exp differs by ≤ 2 ulp: within 8·(k+1)·u·max|gomlx|, k = the contracted length.
// An Add that is also an output, or a bias with a batch axis, must not fuse and still be right.
func TestFusedBiasMax(t *testing.T) { eachVec(t, testFusedBiasMax) }

func testFusedBiasMax(t *testing.T) {
	skipWithoutFusing(t)
	backend := newBackend(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 31))
	const B, H, rows, cols, dk = 2, 3, 300, 301, 24 // 2·3·300·301 scores: above fuseMinElems
	q := randomTensor(rng, dtypes.Float32, []int{B, H, rows, dk})
	k := randomTensor(rng, dtypes.Float32, []int{B, H, cols, dk})
	biasOf := func(batch int) *tensors.Tensor {
		b := make([]float32, batch*rows*cols)
		for i := range b {
			r, c := (i/cols)%rows, i%cols
			if c > r+1 || rng.IntN(8) == 0 || r == 7 {
				b[i] = float32(math.Inf(-1))
			}
		}
		return tensors.FromFlatDataAndDimensions(b, batch, 1, rows, cols)
	}
	for _, c := range []struct {
		name      string
		biasBatch int
		returnAdd bool // the Add is an output too: not fused
		maxes     int64
	}{
		{"fused", 1, false, 1},
		{"add_is_output", 1, true, 0},
		{"bias_with_batch", B, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			bias := biasOf(c.biasBatch)
			run := func(fast, fuse bool) (outs []*tensors.Tensor, maxes int64) {
				prevOn, prevFuse := fastgo.SetEnabled(fast), fastgo.SetFuse(fuse)
				defer func() { fastgo.SetEnabled(prevOn); fastgo.SetFuse(prevFuse) }()
				exec := MustNewExec(forFastgo(backend, fast), func(q, k, bias *Node) []*Node {
					s := DotGeneral(q, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}) // [B, H, rows, cols]
					a := Add(s, bias)                                                   // [B, H, rows, cols]
					m := StopGradient(ReduceAndKeep(a, ReduceMax, -1))                  // [B, H, rows, 1]
					m = Where(IsFinite(m), m, ZerosLike(m))                             // [B, H, rows, 1]
					e := Exp(Sub(a, m))                                                 // [B, H, rows, cols]
					outs := []*Node{e, m}
					if c.returnAdd {
						outs = append(outs, a)
					}
					return outs
				})
				maxes0 := fastgo.FusedMaxCalls.Load()
				outs = exec.MustExec(argsFor(fast, q, k, bias)...)
				return outs, fastgo.FusedMaxCalls.Load() - maxes0
			}
			fused, maxes := run(true, true)
			if maxes != c.maxes {
				t.Fatalf("ops that left their rows' maxima: %d, want %d", maxes, c.maxes)
			}
			apart, maxes := run(true, false)
			if maxes != 0 {
				t.Fatalf("fusing off: %d ops left their rows' maxima", maxes)
			}
			gomlx, _ := run(false, false)
			for i, name := range []string{"exp", "max"} {
				f, a, g := flat32(t, fused[i]), flat32(t, apart[i]), flat32(t, gomlx[i])
				biggest := 0.0
				for _, x := range g {
					biggest = max(biggest, math.Abs(float64(x)))
				}
				bound := 8 * float64(dk+1) * 0x1p-24 * biggest
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
