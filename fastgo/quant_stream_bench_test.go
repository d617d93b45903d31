//go:build linux

package fastgo

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/mhalab/mhalab/models/gguf"
	"github.com/mhalab/mhalab/models/quant"
)

// BenchmarkQuantStream: one decoding token's packed products out of memory — SmolLM2's 30
// layers' Q4_1 matrices (as the model multiplies them: q, k, v stacked, o, gate and up stacked,
// down) and its Q8_0 output head, ~96 MB, far more than the caches — on 1 and 2 workers, in GB/s
// of packed bytes per second of elapsed time, with the planar kernel set in use (kernel/w…), the
// lanes-of-8 AVX2 set on rows in its layout (kernel/avx2-lanes8/w…, where the CPU has AVX2) and,
// with one worker, every other planar set this CPU runs (kernel/<name>/w1: the plain-Go one,
// the AVX2 one on an AVX-512 CPU) for an A/B in one run;
// "read" is a plain 8-byte-word sum over the same bytes, the machine's read bandwidth. The
// calling thread's CPU time is reported too (thread-cpu-GB/s; with one worker the whole work's),
// which a shared machine moves much less than the elapsed time.
func BenchmarkQuantStream(b *testing.B) {
	type mat struct {
		h            quant.Header
		rows, lanes8 []byte
	}
	var mats []mat
	var total int
	add := func(f gguf.TensorType, rows, cols int, seed uint64) {
		m := randomPacked(b, f, rows, cols, seed)
		shape, _ := quant.CarrierShape(f, rows, cols)
		mats = append(mats, mat{quant.Header{Format: f, Rows: rows, Cols: cols, Bt: shape[0]}, planar(m), lanes8(m)})
		total += len(m.Data)
	}
	for l := range 30 { // the fused products (models/smollm2/fused.go): qkv, o, gate+up, down
		for i, s := range [][2]int{{960, 576}, {576, 576}, {3072, 576}, {576, 1536}} {
			add(gguf.TensorQ4_1, s[0], s[1], uint64(100*l+i))
		}
	}
	add(gguf.TensorQ8_0, 49152, 576, 9)
	x := make([]float32, 1536)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	out := make([]float32, 49152)
	for _, k := range quantKernelSets() {
		if k.name == quantK.name {
			continue
		}
		b.Run(fmt.Sprintf("kernel/%s/w1", k.name), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.SetBytes(int64(total))
			start := threadCPU()
			defer func() { cpuRate(b, start, total) }()
			for range b.N {
				for _, m := range mats {
					quantMatMul(k, m.h, m.rows, x[:m.h.Cols], 1, out, 1)
				}
			}
		})
	}
	for _, workers := range []int{1, 2} {
		if k, ok := avx2Lanes8Kernels(); ok {
			b.Run(fmt.Sprintf("kernel/%s/w%d", k.name, workers), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.SetBytes(int64(total))
				start := threadCPU()
				defer func() { cpuRate(b, start, total) }()
				for range b.N {
					for _, m := range mats {
						quantMatMul(k, m.h, m.lanes8, x[:m.h.Cols], 1, out, workers)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("kernel/w%d", workers), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.SetBytes(int64(total))
			start := threadCPU()
			defer func() { cpuRate(b, start, total) }()
			for range b.N {
				for _, m := range mats {
					quantMatMul(quantK, m.h, m.rows, x[:m.h.Cols], 1, out, workers)
				}
			}
		})
		b.Run(fmt.Sprintf("read/w%d", workers), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.SetBytes(int64(total))
			start := threadCPU()
			defer func() { cpuRate(b, start, total) }()
			var sink uint64
			for range b.N {
				for _, m := range mats {
					n := len(m.rows) / 8 * 8
					parallelFor(n/8, 1024, workers, func(lo, hi int) {
						w := unsafe.Slice((*uint64)(unsafe.Pointer(&m.rows[0])), n/8)[lo:hi]
						var s0, s1, s2, s3 uint64
						for i := 0; i+4 <= len(w); i += 4 {
							s0 += w[i]
							s1 += w[i+1]
							s2 += w[i+2]
							s3 += w[i+3]
						}
						sink += s0 + s1 + s2 + s3
					})
				}
			}
			_ = sink
		})
	}
}

// cpuRate reports the calling thread's CPU time per op (with one worker, the whole work's).
func cpuRate(b *testing.B, start int64, bytes int) {
	ns := float64(threadCPU()-start) / float64(b.N)
	b.ReportMetric(ns/1e6, "thread-cpu-ms/op")
	b.ReportMetric(float64(bytes)/ns, "thread-cpu-GB/s")
}
