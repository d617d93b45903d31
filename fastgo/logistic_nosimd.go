//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

// Without GOEXPERIMENT=simd (or off amd64 / Go 1.26) Logistic runs GoMLX's formula in plain Go.

func logisticF32Vec(dst, src []float32) bool { return false }
