//go:build !(goexperiment.simd && amd64 && !go1.27)

package fastgo

// Without GOEXPERIMENT=simd (or off amd64 / Go 1.26) the element-wise executors use plain Go.

func vecName() string { return "go" }

// vecAVX512 is false: the AVX-512 loops (and the passes fused around them, fuse.go) are absent.
const vecAVX512 = false

// vecAVX2 is false: the AVX2 loops are absent too.
const vecAVX2 = false

func expF32Vec(dst, src []float32) bool { return false }

func subExpSumF32Vec(dst, src []float32, m float32, sum bool) (float32, bool) { return 0, false }

func maxF32Vec(init float32, src []float32) (float32, bool) { return 0, false }

func transposeBlocksF32(src []float32, ss int, dst []float32, ds int, y0, y1, nx int) int { return 0 }

func sumF32Vec(src []float32) (float32, bool) { return 0, false }

func binaryF32Vec(o op, dst, a, b []float32, bVec, swap bool) bool { return false }

func copyRunsF32(dst, src []float32, offs []int, width int) bool { return false }
