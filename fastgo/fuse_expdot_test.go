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

	"github.com/mhalab/mhalab/fastgo"
	"github.com/mhalab/mhalab/xla"
)

// TestExpInsideProduct runs softmax's pieces as flashrows writes them — s = q·kᵀ, m =
// ReduceMax(s), e = Exp(Sub(s, m)), the product e·v and then ReduceSum(e) — where the product
// makes e itself (fuse_expdot.go), against every executor apart (fusing off), which must give the
// same bits, and against GoMLX's kernels within 8·(k+1)·u·max|gomlx|. Forms: with and without
// the sum; e also returned (not deferred); values head-major [B, H, cols, dv], read in place where dv is
// the micro-kernel's panel width (checked); the sum before the product in the graph (not
// deferred); e through an Identity (a custom gradient, as mhalib's softmaxSum has), whose output
// the product fills; values with more columns than one micro-tile and a head width whose rows are not a
// multiple of the tile's; and, with the order check off (SetExpDotAnyOrder), a sum before the
// product that makes e itself, in place and in the Identity's output. On one op at a time (mhalab's configuration) the product makes e; on
// GoMLX's parallel executor (not under -race: simplego's own race) the sum may run first and
// make e in place, with the same bits.
func TestExpInsideProduct(t *testing.T) { eachVec(t, testExpInsideProduct) }

func testExpInsideProduct(t *testing.T) {
	skipWithoutFusing(t)
	seed := testSeed(t)
	configs := []string{xla.SimpleGoConfig}
	if testBackendConfig != xla.SimpleGoConfig { // not under -race (backend_race_test.go)
		configs = append(configs, testBackendConfig)
	}
	for _, config := range configs {
		backend, err := simplego.New(config)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name                 string
			rows, cols, dv       int
			sum, returnE, sumFst bool
			identity             bool // e reaches the product through an Identity (mhalib's softmaxSum)
			deferred             bool
			anyOrder             bool // SetExpDotAnyOrder: the sum first defers too, and makes e
			headMajor            bool // v [B, H, cols, dv], rows of a head one after another (read in place when dv is the kernel's panel width)
		}{
			{"sum_first_any_order", 37 * 37, 70, 16, true, false, true, false, true, true, false},
			{"identity_sum_between_any_order", 37 * 37, 70, 16, true, false, true, true, true, true, false},
			{"sum", 37 * 37, 70, 16, true, false, false, false, true, false, false},
			{"no_sum", 37 * 37, 70, 16, false, false, false, false, true, false, false},
			{"wide_values", 517, 520, 150, true, false, false, false, true, false, false},
			{"e_returned", 37 * 37, 70, 16, true, true, false, false, false, false, false},
			{"sum_first", 37 * 37, 70, 16, true, false, true, false, false, false, false},
			{"identity", 37 * 37, 70, 16, true, false, false, true, true, false, false},
			{"identity_no_sum", 37 * 37, 70, 16, false, false, false, true, true, false, false},
			{"identity_sum_first", 37 * 37, 70, 16, true, false, true, true, false, false, false},
			{"values_head_major_64", 37 * 37, 70, 64, true, false, false, false, true, false, true},
			{"values_head_major_16", 517, 300, 16, true, false, false, false, true, false, true},
			{"values_head_major_32", 517, 601, 32, true, false, false, false, true, false, true},
		} {
			t.Run(fmt.Sprintf("%s/%q", c.name, config), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 31))
				const B, H, dk = 1, 3, 24
				q := randomTensor(rng, dtypes.Float32, []int{B, H, c.rows, dk})
				k := randomTensor(rng, dtypes.Float32, []int{B, H, c.cols, dk})
				vDims, vContract, vBatch := []int{c.cols, B, H, c.dv}, []int{0}, []int{1, 2}
				if c.headMajor {
					vDims, vContract, vBatch = []int{B, H, c.cols, c.dv}, []int{2}, []int{0, 1}
				}
				v := randomTensor(rng, dtypes.Float32, vDims)
				run := func(b backends.Backend, fast, fuse bool) (outs []*tensors.Tensor, deferred, made int64) {
					prevOn, prevFuse := fastgo.SetEnabled(fast), fastgo.SetFuse(fuse)
					defer func() { fastgo.SetEnabled(prevOn); fastgo.SetFuse(prevFuse) }()
					prevOrder := fastgo.SetExpDotAnyOrder(c.anyOrder)
					defer fastgo.SetExpDotAnyOrder(prevOrder)
					exec := MustNewExec(b, func(q, k, v *Node) []*Node {
						s := DotGeneral(q, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}) // [B, H, rows, cols]
						m := StopGradient(ReduceAndKeep(s, ReduceMax, -1))                  // [B, H, rows, 1]
						e := Exp(Sub(s, m))                                                 // [B, H, rows, cols]
						w := e
						if c.identity && c.anyOrder { // Identity, sum, product
							w = IdentityWithCustomGradient(e, func(_, g *Node) *Node { return g })
						}
						var l *Node
						if c.sumFst {
							l = ReduceAndKeep(e, ReduceSum, -1) // [B, H, rows, 1]
						}
						if c.identity && !c.anyOrder {
							w = IdentityWithCustomGradient(e, func(_, g *Node) *Node { return g })
						}
						pv := DotGeneral(w, []int{3}, []int{0, 1}, v, vContract, vBatch) // [B, H, rows, dv]
						outs := []*Node{pv, m}
						if c.sum && !c.sumFst {
							l = ReduceAndKeep(e, ReduceSum, -1)
						}
						if l != nil {
							outs = append(outs, l)
						}
						if c.returnE {
							outs = append(outs, e)
						}
						return outs
					})
					d0, m0 := fastgo.DeferredCalls.Load(), fastgo.ExpDotCalls.Load()
					outs = exec.MustExec(argsFor(fast, q, k, v)...)
					return outs, fastgo.DeferredCalls.Load() - d0, fastgo.ExpDotCalls.Load() - m0
				}
				inPlace0 := fastgo.InPlaceValueCalls.Load()
				fused, deferred, made := run(backend, true, true)
				if c.headMajor && c.dv == fastgo.KernelNR() && made == 1 && fastgo.InPlaceValueCalls.Load() == inPlace0 {
					t.Fatal("the product made e but packed the head-major values [B, H, cols, 64] instead of reading them in place")
				}
				wantMade := int64(0)
				if c.deferred && !c.anyOrder && config == xla.SimpleGoConfig {
					wantMade = 1 // any order: the sum, first, made e
				}
				if deferred != map[bool]int64{true: 1, false: 0}[c.deferred] || made != wantMade && !(config == "" && made <= 1 && c.deferred) {
					t.Fatalf("Subs deferred %d, products that made e %d; want %v, %d", deferred, made, c.deferred, wantMade)
				}
				apart, _, _ := run(backend, true, false)
				gomlx, _, _ := run(refBackend(), false, false)
				if len(fused) != len(apart) || len(fused) != len(gomlx) {
					t.Fatalf("outputs: %d fused, %d apart, %d GoMLX", len(fused), len(apart), len(gomlx))
				}
				if config != xla.SimpleGoConfig {
					// The parallel executor orders the sum and the product as it goes: more runs,
					// more of its orders, each compared with the passes apart below.
					for range 7 {
						again, _, _ := run(backend, true, true)
						for i := range again {
							f, a := flat32(t, again[i]), flat32(t, apart[i])
							for j := range f {
								if math.Float32bits(f[j]) != math.Float32bits(a[j]) {
									t.Fatalf("rerun: output %d [%d] (seed %d): fused %g, apart %g (want equal bits)", i, j, seed, f[j], a[j])
								}
							}
						}
					}
				}
				for i := range fused {
					f, a, g := flat32(t, fused[i]), flat32(t, apart[i]), flat32(t, gomlx[i])
					biggest := 0.0
					for _, x := range g {
						biggest = max(biggest, math.Abs(float64(x)))
					}
					bound := 8 * float64(c.cols+1) * 0x1p-24 * biggest
					for j := range f {
						if math.Float32bits(f[j]) != math.Float32bits(a[j]) {
							t.Fatalf("output %d [%d] (seed %d): fused %g, apart %g (want equal bits)", i, j, seed, f[j], a[j])
						}
						if diff := math.Abs(float64(f[j]) - float64(g[j])); !(diff <= bound) {
							t.Fatalf("output %d [%d] (seed %d): fused %g, GoMLX %g: |Δ| %.3g > %.3g", i, j, seed, f[j], g[j], diff, bound)
						}
					}
				}
			})
		}
	}
}
