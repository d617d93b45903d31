package fastgo

// Carriers in the lanes-of-8 layout (quant.Lanes8: the quants of each group of 8 whole blocks
// interleaved two bytes at a time, so that each 32-bit lane of a pair sum holds one block). The
// AVX2 kernels read it directly (quant_lanes8_avx2.go); fastgo asks models/quant to write it
// when they are the kernels in use (quant.go's init). Any other kernel set reads such a carrier
// through lanes8Fallback, row by row back in the planar layout — correct, not fast: a CPU only
// gets lanes-of-8 carriers when its own kernels asked for them, so this serves the tests and a
// carrier built under another kernel choice.

import (
	"github.com/mhalab/mhalab/models/gguf"
	"github.com/mhalab/mhalab/models/quant"
)

// lanes8Kernels is the kernel set for lanes-of-8 carriers: the AVX2 one where the CPU has it,
// else k's kernels on rows converted back to the planar layout.
func lanes8Kernels(k quantKernels) quantKernels {
	if l, ok := avx2Lanes8Kernels(); ok {
		return l
	}
	return lanes8Fallback(k)
}

// lanes8Fallback runs the planar kernels of k on lanes-of-8 rows, each row converted back to
// the planar layout (quant.Unlanes8) first.
func lanes8Fallback(k quantKernels) quantKernels {
	wrap := func(t gguf.TensorType, dot func(rows []byte, a *qAct, y []float32)) func(rows []byte, a *qAct, y []float32) {
		return func(rows []byte, a *qAct, y []float32) {
			rb := a.nb * t.BlockBytes()
			tmp := make([]byte, rb)
			for i := range y {
				quant.Unlanes8(t, rows[i*rb:(i+1)*rb], tmp)
				dot(tmp, a, y[i:i+1])
			}
		}
	}
	out := k
	out.name = k.name + "-unlanes8"
	out.q4_1, out.q8_0 = wrap(gguf.TensorQ4_1, k.q4_1), wrap(gguf.TensorQ8_0, k.q8_0)
	out.dequant = unlanes8Dequant(k.dequant)
	return out
}

// unlanes8Dequant is dequant for lanes-of-8 rows: the row back in the planar layout, then dequant.
func unlanes8Dequant(dequant func(q4 bool, row []byte, w []float32)) func(q4 bool, row []byte, w []float32) {
	return func(q4 bool, row []byte, w []float32) {
		t := gguf.TensorQ8_0
		if q4 {
			t = gguf.TensorQ4_1
		}
		var buf [34 * 64]byte // rows of up to 2048 columns on the stack
		rb := len(w) / 32 * t.BlockBytes()
		tmp := buf[:]
		if rb > len(buf) {
			tmp = make([]byte, rb)
		}
		quant.Unlanes8(t, row[:rb], tmp[:rb])
		dequant(q4, tmp[:rb], w)
	}
}
