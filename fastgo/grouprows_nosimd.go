//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

func hasGroupRows() bool { return false }

func weightRows64(w []float32, ldw, g int, v []float32, ldv, n int, out []float32, ldo int) {}

func prefetchF32(x []float32) {}
