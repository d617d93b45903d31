package fastgo

import (
	"fmt"
	"testing"
)

// BenchmarkTranspose times the transposes mhalib's MHA makes on the pure-Go backend (seed003's
// Gather-based slicing of the fused projection, the head split), on one goroutine, in GB/s
// moved (read + write).
func BenchmarkTranspose(b *testing.B) {
	for _, c := range []struct {
		dims, perm []int
	}{
		{[]int{4096, 1536}, []int{1, 0}},
		{[]int{512, 4096}, []int{1, 0}},
		{[]int{8, 4096, 65}, []int{1, 0, 2}},
		{[]int{32, 128, 8, 64}, []int{0, 2, 1, 3}},
	} {
		dims, perm := simplifyPermutation(c.dims, c.perm)
		n := prodInts(c.dims)
		in, out := make([]float32, n), make([]float32, n)
		b.Run(fmt.Sprint(c.dims, c.perm), func(b *testing.B) {
			for b.Loop() {
				transpose(in, out, dims, perm, 1)
			}
			b.ReportMetric(8*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

func prodInts(d []int) int {
	n := 1
	for _, x := range d {
		n *= x
	}
	return n
}
