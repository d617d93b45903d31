//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// What the CPU runs, read before any test changes vecAVX512 or vecAVX2 (gemv_vec_test.go).
var cpuAVX512, cpuAVX2 = vecAVX512, vecAVX2

// setVec sets the vector loops the kernels take (vec_simd.go's flags; none may be on that the
// CPU lacks: the caller checks vecModes) and returns the previous setting.
func setVec(avx512, avx2 bool) (prev512, prev2 bool) {
	prev512, prev2 = vecAVX512, vecAVX2
	vecAVX512, vecAVX2 = avx512 && cpuAVX512, avx2 && cpuAVX2
	return prev512, prev2
}
