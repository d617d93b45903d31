package fastgo

import (
	"fmt"
	"testing"
)

// BenchmarkGEMVPair times a decoding step's products over cache chunks with one and with two
// examples per task (gemvpair.go): q·Kᵀ, q [32, 1, 64] against keys [32, 256, 64], and
// weights·V, w [32, 1, 256] against values [32, 256, 64], over 100 different chunks of 2 MB
// (800 MB in all: more than the caches, as a 4096-position cache of 4 layers is), 2 workers, in
// GB/s of chunk bytes. Alternate the variants in one run:
//
//	GOEXPERIMENT=simd go test ./fastgo -run NONE -bench GEMVPair -count 4
func BenchmarkGEMVPair(b *testing.B) {
	const heads, keys, d, chunks = 32, 256, 64, 100
	data := make([]float32, chunks*heads*keys*d)
	for i := range data {
		data[i] = float32(i%13)*0.25 - 1.5
	}
	q := make([]float32, heads*keys)
	for i := range q {
		q[i] = float32(i%7) * 0.01
	}
	out := make([]float32, heads*keys)
	size := heads * keys * d
	forms := []struct {
		name string
		lhs  operand[float32]
		rhs  func(chunk []float32) operand[float32]
		n, k int
	}{
		{"qk", newOperand(q[:heads*d], []int{heads, 1, d}, []int{2}, []int{0}),
			func(c []float32) operand[float32] { return newOperand(c, []int{heads, keys, d}, []int{2}, []int{0}) }, keys, d},
		{"pv", newOperand(q, []int{heads, 1, keys}, []int{2}, []int{0}),
			func(c []float32) operand[float32] { return newOperand(c, []int{heads, keys, d}, []int{1}, []int{0}) }, d, keys},
	}
	for _, f := range forms {
		rhs := make([]operand[float32], chunks)
		for c := range chunks {
			rhs[c] = f.rhs(data[c*size:][:size])
		}
		for _, pairs := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/pairs=%v", f.name, pairs), func(b *testing.B) {
				defer func(prev bool) { pairExamples = prev }(pairExamples)
				pairExamples = pairs
				b.SetBytes(int64(chunks * size * 4))
				for b.Loop() {
					for c := range chunks {
						if !gemv(f.lhs, rhs[c], out, heads, 1, f.n, f.k, 2) {
							b.Fatal("gemv declined")
						}
					}
				}
			})
		}
	}
}
