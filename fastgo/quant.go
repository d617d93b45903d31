package fastgo

// Packed (Q8_0, Q4_1) matrix–vector products: the DotGeneral of a models/quant carrier. A
// carrier is a float32 tensor [Bt, C, N] whose words hold a header and a matrix's GGUF blocks
// (models/quant's doc explains why it travels as float32: GoMLX v0.26 has no custom call and
// its DotGeneral wants one dtype). execQuantDot recognises it — the right axes and a header
// that checks — and computes y = x·Wᵀ from the packed blocks inside the kernel, so a decoding
// step reads 0.625 (Q4_1) or 1.06 (Q8_0) bytes per weight instead of 4.
//
// Kernels: quantKernels holds the row–vector products, which multiply each row by x quantised
// once per product to 16-bit blocks (quant_act.go) in integers; the plain-Go ones (quant_go.go)
// are the readable reference and the fallback, the AVX-512 ones (quant_simd.go,
// GOEXPERIMENT=simd) and, on CPUs without AVX-512, the AVX2+FMA ones (quant_avx2.go) compute
// the same integer block sums (quant_internal_test.go). Wherever the CPU has AVX2, fastgo has
// models/quant build carriers in the lanes-of-8 layout (quant.Lanes8), which the faster AVX2
// variant reads (quant_lanes8_avx2.go) — on AVX-512 CPUs too: BenchmarkQuantMatVec on a 2-core
// Intel Xeon (2026-12-03, cpu-µs, one thread), Q4_1 33.5 lanes-of-8 against 52.7 AVX-512 and
// 48.3 AVX2 on planar rows, Q8_0 36.3 against 61.1 and 45.6. execQuantDot picks the kernels by
// the layout a carrier's header names.

import (
	"math"
	"slices"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/mhalab/mhalab/models/gguf"
	"github.com/mhalab/mhalab/models/quant"
)

// quantKernels are the products of one packed row (planar layout, quant.Planar) with x [cols]
// quantised (a, filled by quantise and then layout).
type quantKernels struct {
	name string
	// quantise fills a from x [32·nb] as quantiseX does.
	quantise   func(x []float32, a *qAct)
	q4_1, q8_0 func(rows []byte, a *qAct, y []float32) // y [n] = the n packed rows at rows · x
	// layout fills a.lay from a.q for the q4 or q8 kernel (nil: the kernels read a.q).
	layout func(q4 bool, a *qAct)
	// dequant writes a row's weights into w [cols] exactly as gguf.Dequantise does.
	dequant func(q4 bool, row []byte, w []float32)
}

var (
	quantK       quantKernels // for planar carriers
	quantKLanes8 quantKernels // for lanes-of-8 carriers (quant_lanes8.go)
	quantCalls   atomic.Int64
)

func init() {
	if k, ok := simdQuantKernels(); ok {
		quantK = k
	} else {
		quantK = goQuantKernels
	}
	quantKLanes8 = lanes8Kernels(quantK)
	if installErr == nil {
		quant.SetExecutor(func(b backends.Backend) bool {
			_, ok := b.(*simplego.Backend)
			return ok && Enabled()
		})
		if _, ok := avx2Lanes8Kernels(); ok { // the faster kernels wherever AVX2 runs (quant_lanes8_avx2.go)
			quant.SetLayout(quant.LayoutLanes8)
		}
	}
}

// QuantKernel names the packed-row kernels in use ("avx512", "avx2" or "go"; "avx2-lanes8"
// where the carriers are built in the lanes-of-8 layout for them).
func QuantKernel() string {
	if quant.CurrentLayout() == quant.LayoutLanes8 {
		return quantKLanes8.name
	}
	return quantK.name
}

// QuantCalls returns how many carrier products this package computed.
func QuantCalls() int64 { return quantCalls.Load() }

// execQuantDot computes the DotGeneral if it is a carrier's product (ok), whether or not the
// fast path is switched on: no other executor computes a carrier.
func execQuantDot(backend *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer) (out *simplego.Buffer, ok bool, err error) {
	ls, err := backend.BufferShape(inputs[0])
	if err != nil {
		return nil, false, nil
	}
	rs, err := backend.BufferShape(inputs[1])
	if err != nil || ls.DType != dtypes.Float32 || rs.DType != dtypes.Float32 || ls.Rank() != 3 || rs.Rank() != 3 {
		return nil, false, nil
	}
	rhs, err := backend.BufferData(inputs[1])
	if err != nil {
		return nil, false, nil
	}
	bt, c, n := rs.Dimensions[0], rs.Dimensions[1], rs.Dimensions[2]
	h, blocks, isCarrier := quant.ReadCarrier(rhs.([]float32), bt, c, n)
	if !isCarrier || ls.Dimensions[0] != bt || ls.Dimensions[2] != c {
		return nil, false, nil
	}
	p, err := readDotParams(node)
	if err != nil || !slices.Equal(p.lhsContractingAxes, []int{2}) || !slices.Equal(p.lhsBatchAxes, []int{0}) ||
		!slices.Equal(p.rhsContractingAxes, []int{1}) || !slices.Equal(p.rhsBatchAxes, []int{0}) {
		return nil, false, nil
	}
	lhs, err := backend.BufferData(inputs[0])
	if err != nil {
		return nil, true, err
	}
	m := ls.Dimensions[1]
	out = backend.NewBuffer(shapes.Make(dtypes.Float32, bt, m, n)) // [Bt, M, N]
	outFlat, err := backend.BufferData(out)
	if err != nil {
		return nil, true, err
	}
	k := quantK
	if h.Layout == quant.LayoutLanes8 {
		k = quantKLanes8
	}
	quantMatMul(k, h, blocks, lhs.([]float32), m, outFlat.([]float32), backendParallelism(backend))
	quantCalls.Add(1)
	return out, true, nil
}

// quantMatMul: lhs [Bt, M, C] holds x [M, cols] (x[m, bt·C + c] = lhs[bt, m, c]); out
// [Bt, M, N] receives y[m, r] = Σ_c W[r, c]·x[m, c] at out[bt, m, n], r = bt·N + n. One row
// of x (decoding) is quantised to 16-bit blocks once and goes through the packed-row kernels;
// more (a prompt) through quantGEMM, in float32.
func quantMatMul(k quantKernels, h quant.Header, rows []byte, lhs []float32, m int, out []float32, workers int) {
	if m > 1 {
		quantGEMM(k, h, rows, lhs, m, out, workers)
		return
	}
	rowBytes := h.Cols / 32 * h.Format.BlockBytes()
	rowDot := k.q4_1
	if h.Format == gguf.TensorQ8_0 {
		rowDot = k.q8_0
	}
	a := qActPool.Get().(*qAct)
	defer qActPool.Put(a)
	k.quantise(lhs[:h.Cols], a) // M = 1: lhs [Bt, 1, C] is x [cols]
	if k.layout != nil {
		k.layout(h.Format == gguf.TensorQ4_1, a)
	}
	parallelFor(h.Rows, 64, workers, func(lo, hi int) {
		rowDot(rows[lo*rowBytes:hi*rowBytes], a, out[lo:hi]) // M = 1: out [Bt, 1, N] is y [rows]
	})
	warmAfter(rows[:h.Rows*rowBytes], workers) // warm.go: the next products' rows, while the helpers wait
}

// quantChunkRows is how many rows of W quantGEMM dequantises at a time (≤ 6 MB of float32 for
// SmolLM2's widest rows, 1536). BenchmarkPrefill (smollm2, 93 tokens, CPU time): 64 rows
// 970–1340 ms, 256 rows 550–660 ms, 1024 rows 527–535 ms; the float32 runner 430–475 ms.
const quantChunkRows = 1024

// quantGEMM is quantMatMul for M > 1 rows of x: a prompt multiplies every weight by M values,
// enough work to pay for dequantising W chunk by chunk into float32 and running the float32
// GEMM on each chunk (gemv for M ≤ gemvMaxRows, as for a float32 DotGeneral: the results then
// equal the float32 path's bit for bit), instead of dequantising every weight M times.
func quantGEMM(k quantKernels, h quant.Header, rows []byte, lhs []float32, m int, out []float32, workers int) {
	cols, bt := h.Cols, h.Bt
	c, n := cols/bt, h.Rows/bt
	rowBytes := cols / 32 * h.Format.BlockBytes()
	x := make([]float32, m*cols) // [M, cols]
	for b := range bt {
		for i := range m {
			copy(x[i*cols+b*c:i*cols+(b+1)*c], lhs[(b*m+i)*c:(b*m+i+1)*c])
		}
	}
	xOp := newOperand(x, []int{m, cols}, []int{1}, nil)
	w := make([]float32, quantChunkRows*cols) // [chunk, cols]
	y := make([]float32, m*quantChunkRows)    // [1, M, chunk]
	q4 := h.Format == gguf.TensorQ4_1
	for r0 := 0; r0 < h.Rows; r0 += quantChunkRows {
		rc := min(quantChunkRows, h.Rows-r0)
		parallelFor(rc, 16, workers, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				k.dequant(q4, rows[(r0+r)*rowBytes:(r0+r+1)*rowBytes], w[r*cols:(r+1)*cols])
			}
		})
		wOp := newOperand(w[:rc*cols], []int{rc, cols}, []int{1}, nil)
		if !gemv(xOp, wOp, y[:m*rc], 1, m, rc, cols, workers) { // as run picks for float32
			gemm(kernelF32, xOp, wOp, y[:m*rc], 1, m, rc, cols, workers)
		}
		for i := range m {
			for j := range rc {
				r := r0 + j
				out[(r/n)*m*n+i*n+r%n] = y[i*rc+j]
			}
		}
	}
}

// f16 converts the little-endian IEEE half at b to float32, exactly for every finite half
// (normal, subnormal, zero): its exponent and mantissa bits moved into float32's places are
// the value times 2⁻¹¹², so one exact multiplication rebiases it. No branch, no call — the
// kernels keep their vector registers. quant.NewMatrix refuses Inf/NaN scales, the one case
// this gets wrong.
func f16(b []byte) float32 {
	h := uint32(b[0]) | uint32(b[1])<<8
	return math.Float32frombits(h&0x8000<<16|h&0x7fff<<13) * 0x1p112
}
