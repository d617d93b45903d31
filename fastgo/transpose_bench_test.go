package fastgo

import (
	"fmt"
	"testing"
)

// BenchmarkTranspose times the transposes mhalib's MHA makes on the pure-Go backend (seed003's
// Gather-based slicing of the fused projection, the head split), and one that fits in L2, on one
// goroutine, in GB/s moved (read + write): with each level of vector loops the CPU has (the
// 16×16 register blocks) and with plain Go's tiles, alternated in one process.
func BenchmarkTranspose(b *testing.B) {
	for _, c := range []struct {
		dims, perm []int
	}{
		{[]int{4096, 1536}, []int{1, 0}},
		{[]int{512, 4096}, []int{1, 0}},
		{[]int{256, 512}, []int{1, 0}},
		{[]int{8, 4096, 65}, []int{1, 0, 2}},
		{[]int{32, 128, 8, 64}, []int{0, 2, 1, 3}},
	} {
		dims, perm := simplifyPermutation(c.dims, c.perm)
		n := prodInts(c.dims)
		in, out := make([]float32, n), make([]float32, n)
		for _, level := range append(VecLevels(), "go") {
			b.Run(fmt.Sprintf("%v%v/%s", c.dims, c.perm, level), func(b *testing.B) {
				SetVec(b, level)
				for b.Loop() {
					transpose(in, out, dims, perm, 1)
				}
				b.ReportMetric(8*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

func prodInts(d []int) int {
	n := 1
	for _, x := range d {
		n *= x
	}
	return n
}
