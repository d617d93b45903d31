package mhalib_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"

	"github.com/mhalab/mhalab/internal/backendtest"
	"github.com/mhalab/mhalab/mhalib"
	"github.com/mhalab/mhalab/mhalib/mhatest"
)

func TestHeadSizesFor(t *testing.T) {
	for _, tc := range []struct {
		d, hd int
		want  []int
	}{
		{440, 100, []int{100, 100, 100, 100, 40}},
		{512, 64, []int{64, 64, 64, 64, 64, 64, 64, 64}},
		{10, 3, []int{3, 3, 3, 1}},
		{5, 8, []int{5}},
	} {
		if got := mhalib.HeadSizesFor(tc.d, tc.hd); !slices.Equal(got, tc.want) {
			t.Errorf("HeadSizesFor(%d, %d) = %v, want %v", tc.d, tc.hd, got, tc.want)
		}
	}
	if err := mhalib.Try(func() { mhalib.HeadSizesFor(0, 3) }); err == nil {
		t.Errorf("HeadSizesFor(0, 3): no error")
	}
}

func TestSplitMergeHeads(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(2, 2))
		B, L, D, h := 2, 3, 6, 3
		x := mhatest.Rand(rng, -1, 1, B, L, D)
		res := MustExecOnceN(backend, func(x *Node) []*Node {
			s := mhalib.SplitHeads(x, h)
			return []*Node{s, mhalib.MergeHeads(s)}
		}, toTensor(x, dtypes.Float64))
		split := fromTensor(t, res[0])
		if !slices.Equal(split.Shape, []int{B, h, L, D / h}) {
			t.Fatalf("SplitHeads shape %v", split.Shape)
		}
		for b := range B {
			for n := range h {
				for l := range L {
					for c := range D / h {
						if split.At(b, n, l, c) != x.At(b, l, n*(D/h)+c) {
							t.Fatalf("SplitHeads[%d,%d,%d,%d] is not x[%d,%d,%d]", b, n, l, c, b, l, n*(D/h)+c)
						}
					}
				}
			}
		}
		assertClose(t, "MergeHeads(SplitHeads(x))", res[1], x, 0)
	})
}

// SplitUnevenHeads → MergeUnevenHeads is the identity for every strategy, head n holds the
// columns of head n, and the gradient of Σ merged ⊙ c is c on every backend.
func TestUnevenHeadsRoundTripAndGradient(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, backend backends.Backend) {
		rng := rand.New(rand.NewPCG(3, 3))
		sizes := []int{3, 3, 3, 1}
		B, L, D := 2, 2, 10
		x := mhatest.Rand(rng, -1, 1, B, L, D)
		c := mhatest.Rand(rng, -1, 1, B, L, D)
		wantBlocks := map[mhalib.HeadStrategy][][]int{ // [count, size] per block
			mhalib.HeadsLoop:  {{1, 3}, {1, 3}, {1, 3}, {1, 1}},
			mhalib.HeadsSlice: {{3, 3}, {1, 1}},
			mhalib.HeadsPad:   {{4, 3}},
		}
		for s, blocks := range wantBlocks {
			t.Run(s.String(), func(t *testing.T) {
				res := MustExecOnceN(backend, func(x, c *Node) []*Node {
					parts := mhalib.SplitUnevenHeads(x, sizes, s)
					merged := mhalib.MergeUnevenHeads(parts, sizes, s)
					grad := Gradient(ReduceAllSum(Mul(merged, c)), x)[0]
					return append([]*Node{merged, grad}, parts...)
				}, toTensor(x, dtypes.Float64), toTensor(c, dtypes.Float64))
				assertClose(t, "merge(split(x))", res[0], x, 0)
				assertClose(t, "gradient", res[1], c, 0)
				parts := res[2:]
				if len(parts) != len(blocks) {
					t.Fatalf("%d blocks, want %d", len(parts), len(blocks))
				}
				head := 0
				offset := 0
				for i, p := range parts {
					pt := fromTensor(t, p)
					want := []int{B, blocks[i][0], L, blocks[i][1]}
					if !slices.Equal(pt.Shape, want) {
						t.Fatalf("block %d shape %v, want %v", i, pt.Shape, want)
					}
					for n := range blocks[i][0] {
						for b := range B {
							for l := range L {
								for col := range blocks[i][1] {
									got := pt.At(b, n, l, col)
									want := 0.0 // padding
									if col < sizes[head] {
										want = x.At(b, l, offset+col)
									}
									if got != want {
										t.Fatalf("block %d head %d [%d,%d,%d] = %g, want %g", i, head, b, l, col, got, want)
									}
								}
							}
						}
						offset += sizes[head]
						head++
					}
				}
			})
		}
	})
}
