//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

func axpyF32Vec(dst []float32, s float32, x []float32) bool { return false }

func dotF32Vec(a, b []float32) (float32, bool) { return 0, false }
