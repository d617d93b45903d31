//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import "testing"

// VecLevels names the element-wise loops this CPU can run, best first ("avx512", "avx2"); the
// tests run their cases on each (SetVec). Empty: plain Go only.
func VecLevels() []string {
	var l []string
	if vecAVX512 {
		l = append(l, "avx512")
	}
	if vecAVX2 {
		l = append(l, "avx2")
	}
	return l
}

// SetVec makes the element-wise loops those of level (one of VecLevels, or "go": none) until
// the test ends: "avx2" clears vecAVX512, so an AVX-512 CPU runs the AVX2 loops.
func SetVec(t testing.TB, level string) {
	prev512, prev2 := vecAVX512, vecAVX2
	t.Cleanup(func() { vecAVX512, vecAVX2 = prev512, prev2 })
	switch level {
	case "avx512":
	case "avx2":
		vecAVX512 = false
	case "go":
		vecAVX512, vecAVX2 = false, false
	default:
		t.Fatalf("SetVec(%q): want avx512, avx2 or go", level)
	}
}
