//go:build goexperiment.simd && amd64 && !go1.27 && !race

package fastgo

import "simd/archsimd"

// The partial (tail) loads and stores of the vector kernels: lanes past len(s) read as zero and are
// not written. In a normal build they are archsimd's masked moves; a -race build (which turns on
// checkptr) uses simd_part_race.go instead, because archsimd's SlicePart helpers convert a short
// slice to a pointer to a whole vector, which checkptr rejects ("converted pointer straddles
// multiple allocations") although the masked move never touches the lanes past the end.

// loadPartF32x8 loads s[:min(len(s),8)] into the low lanes of a vector; the rest are zero.
func loadPartF32x8(s []float32) archsimd.Float32x8 { return archsimd.LoadFloat32x8SlicePart(s) }

// storePartF32x8 stores the low min(len(s),8) lanes of v into s.
func storePartF32x8(v archsimd.Float32x8, s []float32) { v.StoreSlicePart(s) }

// loadPartF32x16 loads s[:min(len(s),16)] into the low lanes of a vector; the rest are zero.
func loadPartF32x16(s []float32) archsimd.Float32x16 { return archsimd.LoadFloat32x16SlicePart(s) }

// storePartF32x16 stores the low min(len(s),16) lanes of v into s.
func storePartF32x16(v archsimd.Float32x16, s []float32) { v.StoreSlicePart(s) }

// storePartF32x4 stores the low min(len(s),4) lanes of v into s.
func storePartF32x4(v archsimd.Float32x4, s []float32) { v.StoreSlicePart(s) }
