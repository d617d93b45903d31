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
// may hold any bits: the bytes after a row's scales).
func halves16(p unsafe.Pointer, off, n int) archsimd.Float32x16 {
	f := halfVec(archsimd.LoadUint16x16((*[16]uint16)(unsafe.Add(p, off))))
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

// dotQ4_1AVX512: Σ_b d_w·d_a·Σ q4·q8 + m_w·Σx, 4 blocks a step (a.lay from simdLayout).
// Rows of fewer than 2 blocks go to dotQ4_1Go: the vector loads of the scales read 32 bytes.
func dotQ4_1AVX512(row []byte, a *q8Act) float32 {
	nb := a.nb
	if nb < 2 {
		return dotQ4_1Go(row, a)
	}
	pad, ng := (nb+15)&^15, (nb+3)/4
	var buf [stackBlocks + 16]float32
	sc := buf[:]
	if nb > stackBlocks {
		sc = make([]float32, pad+16)
	}
	sc = sc[:pad+16] // d_w·d_a [nb], then zeros: the last group's load reads 16
	row = row[:20*nb]
	rp := unsafe.Pointer(unsafe.SliceData(row))
	ad, as := a.d[:pad], a.s[:pad]
	var acc0, acc1 archsimd.Float32x16
	for b := 0; b < nb; b += 16 { // scales, and acc1 = Σ_b m_w·Σx
		d := halves16(rp, 2*b, nb-b).Mul(archsimd.LoadFloat32x16((*[16]float32)(ad[b : b+16])))
		d.Store((*[16]float32)(sc[b : b+16]))
		acc1 = halves16(rp, 2*nb+2*b, nb-b).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(as[b:b+16])), acc1)
	}
	q := unsafe.Add(rp, 4*nb)
	lay := unsafe.Pointer(unsafe.SliceData(a.lay[:128*ng]))
	scp := unsafe.Pointer(unsafe.SliceData(sc))
	low, ones := archsimd.BroadcastUint8x64(0x0f), archsimd.BroadcastInt16x32(1)
	spread := archsimd.LoadUint32x16(&q4Spread)
	group := func(v archsimd.Uint8x64, g int) archsimd.Float32x16 { // Σ q4·q8 of blocks 4g…4g+3, 4 lanes each
		lo, hi := v.And(low), v.AsUint16x32().ShiftAllRight(4).AsUint8x64().And(low)
		p := lo.DotProductPairsSaturated(archsimd.LoadInt8x64((*[64]int8)(unsafe.Add(lay, 128*g))))
		p = p.Add(hi.DotProductPairsSaturated(archsimd.LoadInt8x64((*[64]int8)(unsafe.Add(lay, 128*g+64)))))
		return p.DotProductPairs(ones).ConvertToFloat32()
	}
	scale := func(g int) archsimd.Float32x16 { // d_w·d_a of blocks 4g…4g+3, 4 lanes each
		return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(scp, 16*g))).Permute(spread)
	}
	full, g := nb/4, 0
	for ; g+2 <= full; g += 2 {
		acc0 = group(archsimd.LoadUint8x64((*[64]uint8)(unsafe.Add(q, 64*g))), g).MulAdd(scale(g), acc0)
		acc1 = group(archsimd.LoadUint8x64((*[64]uint8)(unsafe.Add(q, 64*g+64))), g+1).MulAdd(scale(g+1), acc1)
	}
	if g < full {
		acc0 = group(archsimd.LoadUint8x64((*[64]uint8)(unsafe.Add(q, 64*g))), g).MulAdd(scale(g), acc0)
		g++
	}
	if g < ng { // the last nb mod 4 blocks (x's lanes past them are zero)
		var v archsimd.Uint8x64
		if nb >= 4 {
			v = archsimd.LoadUint8x64((*[64]uint8)(unsafe.Add(q, 16*nb-64))).Permute(archsimd.LoadUint8x64(&a.tail))
		} else {
			v = archsimd.LoadUint8x64SlicePart(row[4*nb:])
		}
		acc1 = group(v, g).MulAdd(scale(g), acc1)
	}
	return sum16(acc0.Add(acc1))
}

// dotQ8_0AVX512: Σ_b d_w·d_a·Σ q8·q8, a block a step (a.l16 from simdLayout).
func dotQ8_0AVX512(row []byte, a *q8Act) float32 {
	nb := a.nb
	if nb == 0 {
		return 0
	}
	pad := (nb + 15) &^ 15
	var buf [stackBlocks]float32
	sc := buf[:]
	if nb > stackBlocks {
		sc = make([]float32, pad)
	}
	sc = sc[:pad]
	row = row[:34*nb]
	rp := unsafe.Pointer(unsafe.SliceData(row))
	ad := a.d[:pad]
	for b := 0; b < nb; b += 16 { // 32 bytes from 2b: within the row (34·nb ≥ 2·nb + 30)
		halves16(rp, 2*b, nb-b).Mul(archsimd.LoadFloat32x16((*[16]float32)(ad[b : b+16]))).Store((*[16]float32)(sc[b : b+16]))
	}
	q := unsafe.Add(rp, 2*nb)
	x := unsafe.Pointer(unsafe.SliceData(a.l16[:32*nb]))
	block := func(b int) archsimd.Float32x16 { // Σ q8·q8 of block b, 16 lanes
		w := archsimd.LoadInt8x32((*[32]int8)(unsafe.Add(q, 32*b))).ExtendToInt16()
		return w.DotProductPairs(archsimd.LoadInt16x32((*[32]int16)(unsafe.Add(x, 64*b)))).ConvertToFloat32()
	}
	var acc0, acc1 archsimd.Float32x16
	b := 0
	for ; b+2 <= nb; b += 2 {
		acc0 = block(b).MulAdd(archsimd.BroadcastFloat32x16(sc[b]), acc0)
		acc1 = block(b+1).MulAdd(archsimd.BroadcastFloat32x16(sc[b+1]), acc1)
	}
	if b < nb {
		acc0 = block(b).MulAdd(archsimd.BroadcastFloat32x16(sc[b]), acc0)
	}
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

func sum16(v archsimd.Float32x16) float32 {
	v8 := v.GetLo().Add(v.GetHi())
	v4 := v8.GetLo().Add(v8.GetHi())
	v4 = v4.AddPairs(v4) // (0+1, 2+3, 0+1, 2+3)
	return v4.GetElem(0) + v4.GetElem(1)
}
