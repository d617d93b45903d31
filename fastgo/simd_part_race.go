//go:build goexperiment.simd && amd64 && !go1.27 && race

package fastgo

import "simd/archsimd"

// The -race (checkptr) versions of simd_part.go's tail moves: they go through a whole vector on the
// stack, so no pointer ever spans past the end of the caller's slice. Same results, a few copies more.

// loadPartF32x8 loads s[:min(len(s),8)] into the low lanes of a vector; the rest are zero.
func loadPartF32x8(s []float32) archsimd.Float32x8 {
	var buf [8]float32
	copy(buf[:], s)
	return archsimd.LoadFloat32x8(&buf)
}

// storePartF32x8 stores the low min(len(s),8) lanes of v into s.
func storePartF32x8(v archsimd.Float32x8, s []float32) {
	var buf [8]float32
	v.Store(&buf)
	copy(s, buf[:])
}

// loadPartF32x16 loads s[:min(len(s),16)] into the low lanes of a vector; the rest are zero.
func loadPartF32x16(s []float32) archsimd.Float32x16 {
	var buf [16]float32
	copy(buf[:], s)
	return archsimd.LoadFloat32x16(&buf)
}

// storePartF32x16 stores the low min(len(s),16) lanes of v into s.
func storePartF32x16(v archsimd.Float32x16, s []float32) {
	var buf [16]float32
	v.Store(&buf)
	copy(s, buf[:])
}

// storePartF32x4 stores the low min(len(s),4) lanes of v into s.
func storePartF32x4(v archsimd.Float32x4, s []float32) {
	var buf [4]float32
	v.Store(&buf)
	copy(s, buf[:])
}
