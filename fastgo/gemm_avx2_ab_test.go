//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"testing"
)

// gemmABCases are the GEMMs of BenchmarkMHA's cases as this package sees them (lhs, rhs layouts
// as simplego hands them over), for BenchmarkGEMMAVX2AB.
var gemmABCases = []struct {
	name   string
	c      gemmCase
	ll, rl layout
}{
	// seed003's projections: x [4096, 512] · W, W stored [512, 1536] ([k, rows] for the rhs).
	{"proj_4096x1536x512", gemmCase{1, 4096, 1536, 512}, layouts[0], layouts[1]},
	{"projsmall_512x1536x512", gemmCase{1, 512, 1536, 512}, layouts[0], layouts[1]},
	{"projk128_4096x1536x128", gemmCase{1, 4096, 1536, 128}, layouts[0], layouts[1]},
	// scores q·kᵀ per head: [b, 128, 64] · [b, 128, 64]ᵀ.
	{"scores_64x128x128x64", gemmCase{64, 128, 128, 64}, layouts[0], layouts[0]},
	{"scores1_1x128x128x64", gemmCase{1, 128, 128, 64}, layouts[0], layouts[0]},
	// weights·v per head: [b, 128, 128] · [b, 128(k), 64].
	{"values_64x128x64x128", gemmCase{64, 128, 64, 128}, layouts[0], layouts[1]},
	// long's scores, one head: [4096, 64] · [4096, 64]ᵀ.
	{"longscores_1x4096x4096x64", gemmCase{1, 1024, 4096, 64}, layouts[0], layouts[0]},
	// long's weights·v, one head: [1024, 4096] · [4096, 64].
	{"longvalues_1x1024x64x4096", gemmCase{1, 1024, 64, 4096}, layouts[0], layouts[1]},
	// narrow products: 2 and 3 column tiles.
	{"narrow_1x2048x32x512", gemmCase{1, 2048, 32, 512}, layouts[0], layouts[1]},
	{"narrow_1x2048x48x512", gemmCase{1, 2048, 48, 512}, layouts[0], layouts[1]},
}

// BenchmarkGEMMAVX2AB times the whole GEMM (packing included) on one goroutine with the AVX2
// kernel (kernel_avx2.go: groups, a column of row groups a call; tiles, one packed tile a call):
// medians of interleaved rounds (abTime), in GFLOP per CPU-second of the thread.
func BenchmarkGEMMAVX2AB(b *testing.B) {
	kern, ok := asmKernelF32()
	if !ok {
		b.Skip("no AVX2 kernel on this CPU")
	}
	tiles := kern
	tiles.groups = nil
	for _, tc := range gemmABCases {
		l, r, out := randProduct[float32](tc.c, tc.ll, tc.rl, 1, 2)
		flops := 2 * float64(tc.c.batch*tc.c.m*tc.c.n*tc.c.k)
		run := func(kern microKernel[float32]) func() {
			return func() { gemm(kern, l, r, out, tc.c.batch, tc.c.m, tc.c.n, tc.c.k, 1) }
		}
		b.Run(tc.name, func(b *testing.B) {
			abTime(b, 7, 30e6, abVariant{"tiles", flops, run(tiles)}, abVariant{"groups", flops, run(kern)})
		})
	}
}
