//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

// Without the SIMD build only plain Go runs (gemv_vec_test.go).
const cpuAVX512, cpuAVX2 = false, false

func setVec(avx512, avx2 bool) (prev512, prev2 bool) { return false, false }
