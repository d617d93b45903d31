//go:build linux

package fastgo

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/mhalab/mhalab/models/gguf"
	"github.com/mhalab/mhalab/models/quant"
)

// BenchmarkQuantMatVec: one packed matrix–vector product (M = 1) of SmolLM2's MLP shape on one
// goroutine, with every kernel set this CPU runs on planar rows and the lanes-of-8 ones on rows
// in their layout; bytes/s counts the packed bytes read.
func BenchmarkQuantMatVec(b *testing.B) {
	kernels := quantKernelSets()
	if k, ok := avx2Lanes8Kernels(); ok {
		kernels = append(kernels, k)
	}
	for _, f := range []gguf.TensorType{gguf.TensorQ4_1, gguf.TensorQ8_0} {
		rows, cols := 1536, 576
		m := randomPacked(b, f, rows, cols, 1)
		shape, _ := quant.CarrierShape(f, rows, cols)
		h := quant.Header{Format: f, Rows: rows, Cols: cols, Bt: shape[0]}
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		out := make([]float32, rows)
		rowsP, rowsL := planar(m), lanes8(m)
		for _, k := range kernels {
			b.Run(fmt.Sprintf("%s/%s", f, k.name), func(b *testing.B) {
				// One worker runs on this goroutine: lock it to its thread and count that
				// thread's CPU time, which a machine shared with other work moves much less
				// than the elapsed time.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.SetBytes(int64(len(m.Data)))
				start := threadCPU()
				rows := rowsP
				if k.name == "avx2-lanes8" {
					rows = rowsL
				}
				for range b.N {
					quantMatMul(k, h, rows, x, 1, out, 1)
				}
				ns := float64(threadCPU()-start) / float64(b.N)
				b.ReportMetric(ns/1e3, "cpu-µs/op")
				b.ReportMetric(float64(len(m.Data))/ns, "cpu-GB/s")
			})
		}
	}
}

// threadCPU is the calling thread's CPU time in nanoseconds (RUSAGE_THREAD, Linux).
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // 1: RUSAGE_THREAD
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
