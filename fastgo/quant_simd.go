//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// AVX-512 packed-row kernels (simd/archsimd) on x quantised to 8-bit blocks (quant_act.go).
// A row is in the carrier's planar layout (quant.Planar): its nb f16 scales are converted
// first, 16 per few vector operations (halfScalesPadded), into float32 arrays on the stack and
// multiplied by x's block scales; then the integer block sums come 64 weights a instruction:
//
//   - Q4_1: 4 blocks' 64 bytes of nibbles, split into low and high nibbles (u8), times x's int8
//     laid out to match (q4Layout) by VPMADDUBSW (u8·s8 pairs → s16, no saturation: |pair| ≤
//     2·15·127), the two halves added, then VPMADDWD with ones (→ s32, 4 lanes per block); the
//     16 sums converted to float32 and multiplied by their blocks' d_w·d_a (spread 4 lanes
//     each by one permutation) into one of two float32 accumulators; m_w·Σx per block at the
//     end, 16 blocks a vector.
//   - Q8_0: a block's 32 int8 widened to int16, times x's int16 by VPMADDWD (→ 16 s32 sums),
//     converted and multiplied by the broadcast d_w·d_a.
//
// The integer sums equal the plain-Go kernels' exactly; only the float32 additions come in
// another order. The loops index through unsafe.Add after one length check, so that no bounds
// check or call sits in them. AVX2-only CPUs get the plain-Go kernels.

import (
	"unsafe"

	"simd/archsimd"
)

func simdQuantKernels() (quantKernels, bool) {
	if !archsimd.X86.AVX512() {
		return quantKernels{}, false
	}
	return quantKernels{name: "avx512", q4_1: dotQ4_1AVX512, q8_0: dotQ8_0AVX512, layout: simdLayout, dequant: dequantRowAVX512}, true
}

// stackBlocks is how many blocks' scales a kernel converts into stack arrays (cols ≤ 2048);
// longer rows allocate.
const stackBlocks = 64

// halfScales converts nb little-endian halves at src into dst [nb], as f16 does.
func halfScales(src []byte, dst []float32) {
	nb := len(dst)
	src = src[:2*nb]
	b := 0
	for ; b+16 <= nb; b += 16 {
		halfVec(archsimd.LoadUint16x16((*[16]uint16)(unsafe.Pointer(&src[2*b])))).Store((*[16]float32)(dst[b : b+16]))
	}
	for ; b < nb; b++ {
		dst[b] = f16(src[2*b:])
	}
}

// halfVec converts 16 halves to float32 as f16 does.
func halfVec(h16 archsimd.Uint16x16) archsimd.Float32x16 {
	h := h16.ExtendToUint32()
	mag, sign := archsimd.BroadcastUint32x16(0x7fff), archsimd.BroadcastUint32x16(0x8000)
	return h.And(sign).ShiftAllLeft(16).Or(h.And(mag).ShiftAllLeft(13)).AsFloat32x16().Mul(archsimd.BroadcastFloat32x16(0x1p112))
}

// halves16 converts the 16 halves at p+off to float32 as f16 does, zeroing lanes i ≥ n (which
// may hold any bits: the bytes after a row's scales). Sign-extended to 32 bits and shifted left
// by 13, a half has its sign at bit 31, copies of it at bits 30…28 (cleared by the mask) and
// its exponent and mantissa bits at float32's places: the value times 2⁻¹¹², rebiased exactly.
func halves16(p unsafe.Pointer, off, n int) archsimd.Float32x16 {
	h := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(p, off))).ExtendToInt32().ShiftAllLeft(13)
	f := h.And(archsimd.BroadcastInt32x16(-0x70002000)).AsFloat32x16().Mul(archsimd.BroadcastFloat32x16(0x1p112)) // 0x8fffe000
	if n < 16 {
		f = f.Masked(archsimd.Mask32x16FromBits(uint16(1)<<n - 1))
	}
	return f
}

// simdLayout lays a.q out for the kernel: Q4_1 a.lay [128 × ⌈nb/4⌉], per group g of 4 blocks
// the first 16 values of blocks 4g…4g+3, then their last 16 (the weights' low and high
// nibbles), blocks past nb zero, and a.tail (Q4_1's last nb mod 4 blocks, loaded with the 64
// bytes that end the row, permuted to the front); Q8_0 a.l16 [32·nb], a.q widened to int16.
func simdLayout(q4 bool, a *q8Act) {
	if a.nb == 0 {
		return
	}
	if !q4 {
		a.l16 = grow(a.l16, len(a.q))
		for i, v := range a.q {
			a.l16[i] = int16(v)
		}
		return
	}
	ng := (a.nb + 3) / 4
	a.lay = grow(a.lay, 128*ng)
	clear(a.lay[128*(ng-1):])
	for b := range a.nb {
		g, k := b/4, b%4
		copy(a.lay[128*g+16*k:128*g+16*k+16], a.q[32*b:32*b+16])
		copy(a.lay[128*g+64+16*k:128*g+64+16*k+16], a.q[32*b+16:32*b+32])
	}
	r := a.nb % 4
	for i := range a.tail {
		a.tail[i] = uint8(i)
		if i < 16*r {
			a.tail[i] = uint8(64 - 16*r + i)
		}
	}
}

// q4Spread sends lane i of the 4 blocks' scales to lanes 4i…4i+3.
var q4Spread = [16]uint32{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}

// rows4 returns the addresses of rows r…r+3 of the n rows (rb bytes each) at base, the last
// row repeated past n: the kernels compute 4 rows at a time, sharing x's loads.
func rows4(base unsafe.Pointer, r, n, rb int) (p0, p1, p2, p3 unsafe.Pointer) {
	return unsafe.Add(base, r*rb), unsafe.Add(base, min(r+1, n-1)*rb), unsafe.Add(base, min(r+2, n-1)*rb), unsafe.Add(base, min(r+3, n-1)*rb)
}

// dotQ4_1AVX512: y[i] = Σ_b d_w·d_a·Σ q4·q8 + m_w·Σx for the len(y) rows at rows, 4 rows and
// 4 blocks a step (a.lay from simdLayout). Rows of fewer than 2 blocks go to dotQ4_1Go: the
// vector loads of the scales read 32 bytes.
func dotQ4_1AVX512(rows []byte, a *q8Act, y []float32) {
	nb, n := a.nb, len(y)
	if nb < 2 || n == 0 {
		dotQ4_1Go(rows, a, y)
		return
	}
	rb, pad, ng := 20*nb, (nb+15)&^15, (nb+3)/4
	rows = rows[:n*rb]
	stride := pad + 16                  // d_w·d_a [nb] of a row, then the last group's load reads 16
	scBuf := make([]float32, 2*stride) // [2 rows, stride]
	ad, as := a.d[:pad], a.s[:pad]
	base := unsafe.Pointer(unsafe.SliceData(rows))
	lay := unsafe.Pointer(unsafe.SliceData(a.lay[:128*ng]))
	low, ones := archsimd.BroadcastUint8x64(0x0f), archsimd.BroadcastInt16x32(1)
	spread, tail := archsimd.LoadUint32x16(&q4Spread), archsimd.LoadUint8x64(&a.tail)
	// prologue stores row p's d_w·d_a in sc and returns Σ_b m_w·Σx by lane.
	prologue := func(p unsafe.Pointer, sc []float32) (m archsimd.Float32x16) {
		for b := 0; b < nb; b += 16 {
			halves16(p, 2*b, nb-b).Mul(archsimd.LoadFloat32x16((*[16]float32)(ad[b : b+16]))).Store((*[16]float32)(sc[b : b+16]))
			m = halves16(p, 2*nb+2*b, nb-b).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(as[b:b+16])), m)
		}
		return m
	}
	// step adds group g of a row (its 64 bytes of nibbles v, its scales at sc) to acc.
	step := func(v archsimd.Uint8x64, xl, xh archsimd.Int8x64, sc unsafe.Pointer, g int, acc archsimd.Float32x16) archsimd.Float32x16 {
		lo, hi := v.And(low), v.AsUint16x32().ShiftAllRight(4).AsUint8x64().And(low)
		f := lo.DotProductPairsSaturated(xl).Add(hi.DotProductPairsSaturated(xh)).DotProductPairs(ones).ConvertToFloat32()
		return f.MulAdd(archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(sc, 16*g))).Permute(spread), acc)
	}
	nib := func(p unsafe.Pointer, g int) archsimd.Uint8x64 {
		return archsimd.LoadUint8x64((*[64]uint8)(unsafe.Add(p, 4*nb+64*g)))
	}
	sc0, sc1 := scBuf[:stride], scBuf[stride:2*stride]
	s0, s1 := unsafe.Pointer(&sc0[0]), unsafe.Pointer(&sc1[0])
	full := nb / 4
	for r := 0; r < n; r += 2 {
		p0, p1 := unsafe.Add(base, r*rb), unsafe.Add(base, min(r+1, n-1)*rb)
		acc0, acc1 := prologue(p0, sc0), prologue(p1, sc1)
		g := 0
		for ; g < full; g++ {
			xl := archsimd.LoadInt8x64((*[64]int8)(unsafe.Add(lay, 128*g)))
			xh := archsimd.LoadInt8x64((*[64]int8)(unsafe.Add(lay, 128*g+64)))
			acc0 = step(nib(p0, g), xl, xh, s0, g, acc0)
			acc1 = step(nib(p1, g), xl, xh, s1, g, acc1)
		}
		if g < ng { // the last nb mod 4 blocks (x's lanes past them are zero)
			xl := archsimd.LoadInt8x64((*[64]int8)(unsafe.Add(lay, 128*g)))
			xh := archsimd.LoadInt8x64((*[64]int8)(unsafe.Add(lay, 128*g+64)))
			last := func(p unsafe.Pointer) archsimd.Uint8x64 {
				if nb >= 4 { // the row's last 64 bytes, the blocks moved to the front
					return archsimd.LoadUint8x64((*[64]uint8)(unsafe.Add(p, 20*nb-64))).Permute(tail)
				}
				return archsimd.LoadUint8x64SlicePart(unsafe.Slice((*uint8)(unsafe.Add(p, 4*nb+64*g)), 16*(nb-4*g)))
			}
			acc0 = step(last(p0), xl, xh, s0, g, acc0)
			acc1 = step(last(p1), xl, xh, s1, g, acc1)
		}
		y[r] = sum16(acc0)
		if r+1 < n {
			y[r+1] = sum16(acc1)
		}
	}
}

// store4 writes the lane sums of acc0…acc3 to y[r…r+3], those before len(y).
func store4(y []float32, r int, acc0, acc1, acc2, acc3 archsimd.Float32x16) {
	y[r] = sum16(acc0)
	if r+3 < len(y) {
		y[r+1], y[r+2], y[r+3] = sum16(acc1), sum16(acc2), sum16(acc3)
		return
	}
	if r+1 < len(y) {
		y[r+1] = sum16(acc1)
	}
	if r+2 < len(y) {
		y[r+2] = sum16(acc2)
	}
}

// dotQ8_0AVX512: y[i] = Σ_b d_w·d_a·Σ q8·q8 for the len(y) rows at rows, 4 rows and a block a
// step (a.l16 from simdLayout).
func dotQ8_0AVX512(rows []byte, a *q8Act, y []float32) {
	nb, n := a.nb, len(y)
	if nb == 0 || n == 0 {
		dotQ8_0Go(rows, a, y)
		return
	}
	rb, pad := 34*nb, (nb+15)&^15
	rows = rows[:n*rb]
	scBuf := make([]float32, 4*pad) // [4 rows, pad]: d_w·d_a
	ad := a.d[:pad]
	base := unsafe.Pointer(unsafe.SliceData(rows))
	x := unsafe.Pointer(unsafe.SliceData(a.l16[:32*nb]))
	prologue := func(p unsafe.Pointer, sc []float32) { // 32 bytes from 2b: within the row (34·nb ≥ 2·nb + 30)
		for b := 0; b < nb; b += 16 {
			halves16(p, 2*b, nb-b).Mul(archsimd.LoadFloat32x16((*[16]float32)(ad[b : b+16]))).Store((*[16]float32)(sc[b : b+16]))
		}
	}
	step := func(p unsafe.Pointer, xb archsimd.Int16x32, sc []float32, b int, acc archsimd.Float32x16) archsimd.Float32x16 {
		w := archsimd.LoadInt8x32((*[32]int8)(unsafe.Add(p, 2*nb+32*b))).ExtendToInt16()
		return w.DotProductPairs(xb).ConvertToFloat32().MulAdd(archsimd.BroadcastFloat32x16(sc[b]), acc)
	}
	sc0, sc1, sc2, sc3 := scBuf[:nb], scBuf[pad:pad+nb], scBuf[2*pad:2*pad+nb], scBuf[3*pad:3*pad+nb]
	for r := 0; r < n; r += 4 {
		p0, p1, p2, p3 := rows4(base, r, n, rb)
		prologue(p0, scBuf[:pad])
		prologue(p1, scBuf[pad:2*pad])
		prologue(p2, scBuf[2*pad:3*pad])
		prologue(p3, scBuf[3*pad:])
		var acc0, acc1, acc2, acc3 archsimd.Float32x16
		for b := range sc0 {
			xb := archsimd.LoadInt16x32((*[32]int16)(unsafe.Add(x, 64*b)))
			acc0 = step(p0, xb, sc0, b, acc0)
			acc1 = step(p1, xb, sc1, b, acc1)
			acc2 = step(p2, xb, sc2, b, acc2)
			acc3 = step(p3, xb, sc3, b, acc3)
		}
		store4(y, r, acc0, acc1, acc2, acc3)
	}
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

func sum16(v archsimd.Float32x16) float32 {
	v8 := v.GetLo().Add(v.GetHi())
	v4 := v8.GetLo().Add(v8.GetHi())
	v4 = v4.AddPairs(v4) // (0+1, 2+3, 0+1, 2+3)
	return v4.GetElem(0) + v4.GetElem(1)
}

// halves16Into is halves16 for tests: dst [16] from src [32 bytes].
func halves16Into(src []byte, n int, dst []float32) bool {
	halves16(unsafe.Pointer(&src[:32][0]), 0, n).Store((*[16]float32)(dst[:16]))
	return true
}
