//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

func axpyF32Vec(dst []float32, s float32, x []float32) bool { return false }

func dotF32Vec(a, b []float32) (float32, bool) { return 0, false }

func dot4F32Vec(a0, a1, a2, a3, b []float32, out *[4]float32) bool { return false }

func dot4x4F32Vec(a, b *[4][]float32, out *[16]float32) bool { return false }

func axpy64F32Vec(a []float32, rows, k int, b []float32, base int, contractOff []int, c []float32, ldc int) bool {
	return false
}

func dotRowsF32Vec(a, b []float32, ldb int, out []float32) bool { return false }
