//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

func hasPairKernels() bool { return false }

func dotRows64PairF32Vec(a0, a1, b0, b1 []float32, ldb int, out0, out1 []float32) bool { return false }

func axpy64PairF32Vec(a0, a1, b0, b1 []float32, ld int, c0, c1 []float32) bool { return false }
