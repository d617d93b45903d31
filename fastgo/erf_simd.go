//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import "simd/archsimd"

// erfF32Vec sets dst[i] = erf(src[i]) for i < min(len(dst), len(src)) as erf_pieces.go
// describes and reports true, or reports false (and does nothing) without AVX-512 or AVX2. Both
// loops compute erfPiecesRef lane for lane: the bits of GoMLX's float32(math.Erf(float64(x)))
// for every input.
func erfF32Vec(dst, src []float32) bool {
	n := min(len(dst), len(src))
	switch {
	case vecAVX512:
		i := 0
		for ; i+8 <= n; i += 8 {
			erf8Pieces(archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
		}
		if i < n {
			storePartF32x8(erf8Pieces(loadPartF32x8(src[i:n])), dst[i:n])
		}
	case vecAVX2:
		i := 0
		for ; i+8 <= n; i += 8 {
			erf8PiecesAVX2(archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
		}
		if i < n {
			storePartF32x8(erf8PiecesAVX2(loadPartF32x8(src[i:n])), dst[i:n])
		}
	default:
		return false
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
	return true
}
