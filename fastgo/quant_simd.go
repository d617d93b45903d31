//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// AVX-512 packed-row kernels (simd/archsimd). A row is in the carrier's planar layout
// (quant.Planar): its nb f16 scales are converted first, 16 per few vector operations
// (halfScales), into a float32 array on the stack; then each 32-weight block is one step:
// 16 bytes (Q4_1 nibbles) or 2×16 int8 (Q8_0) widened to two vectors of 16 int32, converted
// to float32 and multiplied with x; the block's sum by lane, times d, goes into one of two
// float32 accumulators (Q4_1 adds m·Σx per block at the end, from the block sums of x). The
// weights are not rounded to float32 first as gguf.Dequantise rounds them: the result is the
// same sum in another order, within the bound TestQuantKernelsAgainstFloat64 checks. The loops
// index through unsafe.Add after one length check, so that no bounds check or call sits in
// them and Go keeps the accumulators in registers. AVX2-only CPUs get the plain-Go kernels.

import (
	"unsafe"

	"simd/archsimd"
)

func simdQuantKernels() (quantKernels, bool) {
	if !archsimd.X86.AVX512() {
		return quantKernels{}, false
	}
	return quantKernels{name: "avx512", q4_1: dotQ4_1AVX512, q8_0: dotQ8_0AVX512, dequant: dequantRowAVX512}, true
}

// stackBlocks is how many blocks' scales a kernel converts into stack arrays (cols ≤ 2048);
// longer rows allocate.
const stackBlocks = 64

// halfScales converts nb little-endian halves at src into dst [nb], as f16 does.
func halfScales(src []byte, dst []float32) {
	nb := len(dst)
	src = src[:2*nb]
	mag, sign := archsimd.BroadcastUint32x16(0x7fff), archsimd.BroadcastUint32x16(0x8000)
	rebias := archsimd.BroadcastFloat32x16(0x1p112)
	b := 0
	for ; b+16 <= nb; b += 16 {
		h := archsimd.LoadUint16x16((*[16]uint16)(unsafe.Pointer(&src[2*b]))).ExtendToUint32()
		f := h.And(sign).ShiftAllLeft(16).Or(h.And(mag).ShiftAllLeft(13)).AsFloat32x16().Mul(rebias)
		f.Store((*[16]float32)(dst[b : b+16]))
	}
	for ; b < nb; b++ {
		dst[b] = f16(src[2*b:])
	}
}

// dotQ4_1AVX512 sums each block as d·Σ q·x + m·Σ x (xs [nb]: the blocks' Σ x, computed once
// per x by blockSums): the same sum as Σ (d·q + m)·x, regrouped, in fewer operations — per
// block two conversions, a multiply and two fused multiply-adds, on two accumulators taken in
// turn (each FMA waits for the one before on its accumulator).
func dotQ4_1AVX512(row []byte, x, xs []float32) float32 {
	nb := len(x) / 32
	if nb == 0 {
		return 0
	}
	var buf [2 * stackBlocks]float32
	dm := buf[:]
	if nb > stackBlocks {
		dm = make([]float32, 2*nb)
	}
	dm = dm[:2*nb]
	halfScales(row[:4*nb], dm) // the d's, then the m's
	ds, ms := dm[:nb], dm[nb:]
	q := unsafe.Pointer(unsafe.SliceData(row[4*nb : 20*nb]))
	xp := unsafe.Pointer(unsafe.SliceData(x[:32*nb]))
	low := archsimd.BroadcastUint32x16(0x0f)
	block := func(b int) archsimd.Float32x16 { // Σ q·x of block b, by lane
		qv := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(q, 16*b))).ExtendToUint32() // [16]uint32
		t := qv.And(low).ConvertToFloat32().Mul(archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(xp, 128*b))))
		return qv.ShiftAllRight(4).ConvertToFloat32().MulAdd(archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(xp, 128*b+64))), t)
	}
	acc0, acc1 := scaledBlocks(ds, block)
	// + Σ_b m_b·(Σx)_b, 16 blocks a vector, into acc1; the last nb mod 16 in Go.
	xs = xs[:nb]
	b := 0
	for ; b+16 <= nb; b += 16 {
		acc1 = archsimd.LoadFloat32x16((*[16]float32)(ms[b:b+16])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(xs[b:b+16])), acc1)
	}
	var tail float32
	for ; b < nb; b++ {
		tail += ms[b] * xs[b]
	}
	return sum16(acc0.Add(acc1)) + tail
}

// dotQ8_0AVX512 sums each block as d·Σ q·x, on two accumulators taken in turn.
func dotQ8_0AVX512(row []byte, x, _ []float32) float32 {
	nb := len(x) / 32
	if nb == 0 {
		return 0
	}
	var dBuf [stackBlocks]float32
	ds := dBuf[:]
	if nb > stackBlocks {
		ds = make([]float32, nb)
	}
	ds = ds[:nb]
	halfScales(row[:2*nb], ds)
	q := unsafe.Pointer(unsafe.SliceData(row[2*nb : 34*nb]))
	xp := unsafe.Pointer(unsafe.SliceData(x[:32*nb]))
	block := func(b int) archsimd.Float32x16 { // Σ q·x of block b, by lane
		q0 := archsimd.LoadInt8x16((*[16]int8)(unsafe.Add(q, 32*b))).ExtendToInt32().ConvertToFloat32()
		q1 := archsimd.LoadInt8x16((*[16]int8)(unsafe.Add(q, 32*b+16))).ExtendToInt32().ConvertToFloat32()
		t := q0.Mul(archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(xp, 128*b))))
		return q1.MulAdd(archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(xp, 128*b+64))), t)
	}
	acc0, acc1 := scaledBlocks(ds, block)
	return sum16(acc0.Add(acc1))
}

// dequantRowAVX512 is dequantRow 16 weights at a time: Q4_1 float32(d·q) + m (Mul, then Add),
// Q8_0 d·q — the same roundings, so the same float32 weights.
func dequantRowAVX512(q4 bool, row []byte, w []float32) {
	nb := len(w) / 32
	if nb == 0 {
		return
	}
	var buf [2 * stackBlocks]float32
	dm := buf[:]
	if nb > stackBlocks {
		dm = make([]float32, 2*nb)
	}
	wp := unsafe.Pointer(unsafe.SliceData(w[:32*nb]))
	store := func(b, half int, v archsimd.Float32x16) {
		v.Store((*[16]float32)(unsafe.Add(wp, 128*b+64*half)))
	}
	if !q4 {
		ds := dm[:nb]
		halfScales(row[:2*nb], ds)
		q := unsafe.Pointer(unsafe.SliceData(row[2*nb : 34*nb]))
		for b, d := range ds {
			dv := archsimd.BroadcastFloat32x16(d)
			store(b, 0, archsimd.LoadInt8x16((*[16]int8)(unsafe.Add(q, 32*b))).ExtendToInt32().ConvertToFloat32().Mul(dv))
			store(b, 1, archsimd.LoadInt8x16((*[16]int8)(unsafe.Add(q, 32*b+16))).ExtendToInt32().ConvertToFloat32().Mul(dv))
		}
		return
	}
	dm = dm[:2*nb]
	halfScales(row[:4*nb], dm)
	ds, ms := dm[:nb], dm[nb:]
	q := unsafe.Pointer(unsafe.SliceData(row[4*nb : 20*nb]))
	low := archsimd.BroadcastUint32x16(0x0f)
	for b, d := range ds {
		dv, mv := archsimd.BroadcastFloat32x16(d), archsimd.BroadcastFloat32x16(ms[b])
		qv := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(q, 16*b))).ExtendToUint32()
		store(b, 0, qv.And(low).ConvertToFloat32().Mul(dv).Add(mv))
		store(b, 1, qv.ShiftAllRight(4).ConvertToFloat32().Mul(dv).Add(mv))
	}
}

// scaledBlocks returns Σ_b ds[b]·block(b) by lane, on two accumulators taken in turn (each
// fused multiply-add waits for the one before on its accumulator). It and block inline into
// the kernels.
func scaledBlocks(ds []float32, block func(b int) archsimd.Float32x16) (acc0, acc1 archsimd.Float32x16) {
	b := 0
	for ; b+2 <= len(ds); b += 2 {
		acc0 = archsimd.BroadcastFloat32x16(ds[b]).MulAdd(block(b), acc0)
		acc1 = archsimd.BroadcastFloat32x16(ds[b+1]).MulAdd(block(b+1), acc1)
	}
	if b < len(ds) {
		acc0 = archsimd.BroadcastFloat32x16(ds[b]).MulAdd(block(b), acc0)
	}
	return acc0, acc1
}

func sum16(v archsimd.Float32x16) float32 {
	v8 := v.GetLo().Add(v.GetHi())
	v4 := v8.GetLo().Add(v8.GetHi())
	v4 = v4.AddPairs(v4) // (0+1, 2+3, 0+1, 2+3)
	return v4.GetElem(0) + v4.GetElem(1)
}
