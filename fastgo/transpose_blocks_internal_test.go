//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math/rand/v2"
	"testing"
)

// TestTransposeBlocksF32AVX512: transposeBlocksF32's 16×16 register blocks (transpose16x16F32:
// the first stage for all 16 rows, then two groups of 8, the second from a stack buffer) as
// checkTransposeBlocks describes.
func TestTransposeBlocksF32AVX512(t *testing.T) {
	if !vecAVX512 {
		t.Skip("the CPU has no AVX-512 (or MHALAB_FASTGO_VEC is not avx512)")
	}
	checkTransposeBlocks(t, 37, transposeBlocksF32)
}

// TestTransposeBlocksF32AVX2: transposeBlocksF32AVX2's four 8×8 blocks a block, as
// checkTransposeBlocks describes.
func TestTransposeBlocksF32AVX2(t *testing.T) {
	needAVX2(t)
	checkTransposeBlocks(t, 36, transposeBlocksF32AVX2)
}

// checkTransposeBlocks runs a block transpose on random row ranges [y0, y1), widths nx and
// strides, sources at every offset modulo 16 (the loads' alignment): it must set dst[x·ds + y] =
// src[y·ss + x] for y0 ≤ y < y1 and x below the returned nx/16·16 (0 with fewer than 16 rows or
// columns), and write nothing else of dst.
func checkTransposeBlocks(t *testing.T, stream uint64, transpose func(src []float32, ss int, dst []float32, ds int, y0, y1, nx int) int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(vecSeed(t), stream))
	for trial := range 300 {
		nx, ny := rng.IntN(70), rng.IntN(70)
		y0 := rng.IntN(ny + 1)
		y1 := y0 + rng.IntN(ny-y0+1)
		ss, ds := nx+rng.IntN(5), ny+1+rng.IntN(5)
		shift := rng.IntN(16)
		src := make([]float32, shift+ny*ss+8)
		for i := range src {
			src[i] = float32(i)
		}
		src = src[shift:]
		dst := make([]float32, nx*ds+8)
		for i := range dst {
			dst[i] = -1
		}
		end := transpose(src, ss, dst, ds, y0, y1, nx)
		want := nx / 16 * 16
		if y1-y0 < 16 || nx < 16 {
			want = 0
		}
		if end != want {
			t.Fatalf("trial %d: nx %d rows [%d, %d): returned %d, want %d", trial, nx, y0, y1, end, want)
		}
		for i, v := range dst {
			x, y := i/ds, i%ds
			w := float32(-1)
			if x < end && y >= y0 && y < y1 {
				w = src[y*ss+x]
			}
			if v != w {
				t.Fatalf("trial %d: nx %d rows [%d, %d) ss %d ds %d: dst[%d] (x %d, y %d) = %g, want %g", trial, nx, y0, y1, ss, ds, i, x, y, v, w)
			}
		}
	}
}
