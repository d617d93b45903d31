//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

// erfF32Vec: no vector loop in this build (erf_simd.go).
func erfF32Vec(dst, src []float32) bool { return false }
