package fastgo

import (
	"fmt"
	"testing"

	"github.com/mhalab/mhalab/models/gguf"
	"github.com/mhalab/mhalab/models/quant"
)

// lanes8 is m's rows in the lanes-of-8 layout.
func lanes8(m *quant.Matrix) []byte {
	out := make([]byte, len(m.Data))
	rb := m.RowBytes()
	for r := range m.Rows {
		quant.Lanes8(m.Format, m.Row(r), out[r*rb:(r+1)*rb])
	}
	return out
}

// lanes8KernelSets: the kernel sets that read lanes-of-8 carriers here — the AVX2 one (where
// the CPU has AVX2, AVX-512 CPUs included) and the fallback on the plain-Go kernels.
func lanes8KernelSets() []quantKernels {
	sets := []quantKernels{lanes8Fallback(goQuantKernels)}
	if k, ok := avx2Lanes8Kernels(); ok {
		sets = append(sets, k)
	}
	return sets
}

// TestLanes8KernelsSameIntegerSums: the lanes-of-8 kernels on rows in that layout give the
// plain-Go kernels' results on the same rows in the planar layout, within the float32
// reordering bound of TestQuantKernelsSameIntegerSums (the integer block sums are the same),
// for 1 … 66 blocks (whole groups of 8 and tails) and row counts that are not multiples of 4.
func TestLanes8KernelsSameIntegerSums(t *testing.T) {
	seed := vecSeed(t)
	for _, k := range lanes8KernelSets() {
		for _, f := range []gguf.TensorType{gguf.TensorQ4_1, gguf.TensorQ8_0} {
			for _, cols := range []int{32, 64, 96, 128, 160, 224, 256, 288, 384, 512, 576, 1536, 2080, 2112} { // tails of 0 … 7 blocks
				for _, nr := range []int{1, 5, 7} {
					t.Run(fmt.Sprintf("%s/%s/%dx%d", k.name, f, nr, cols), func(t *testing.T) {
						testSameIntegerSums(t, k, lanes8, f, nr, cols, seed+uint64(cols*8+nr))
					})
				}
			}
		}
	}
}

// TestLanes8Dequant: dequantising a lanes-of-8 row gives the planar row's weights exactly.
func TestLanes8Dequant(t *testing.T) {
	seed := vecSeed(t)
	for _, k := range lanes8KernelSets() {
		for _, f := range []gguf.TensorType{gguf.TensorQ4_1, gguf.TensorQ8_0} {
			for _, cols := range []int{32, 128, 160, 288, 576, 1536} {
				m := randomPacked(t, f, 3, cols, seed+uint64(cols))
				rows, ref := lanes8(m), planar(m)
				rb := m.RowBytes()
				got, want := make([]float32, cols), make([]float32, cols)
				for r := range 3 {
					k.dequant(f == gguf.TensorQ4_1, rows[r*rb:(r+1)*rb], got)
					dequantRow(f == gguf.TensorQ4_1, ref[r*rb:(r+1)*rb], want)
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%s %s [%d, %d] row %d weight %d: %g, want %g", k.name, f, 3, cols, r, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
