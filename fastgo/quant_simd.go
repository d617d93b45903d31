//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// AVX-512 packed-row kernels (simd/archsimd) on x quantised to 16-bit blocks (quant_act.go),
// 4 rows a step sharing x's loads. A row is in the carrier's planar layout (quant.Planar): its
// nb f16 scales are converted first, 16 per few vector operations (halves16: their bits moved
// into float32's places, the value times 2⁻¹¹²), and multiplied by x's block scales times 2¹¹²
// (scaleForKernels), which rebiases them exactly; then the integer block sums come from VPMADDWD (int16 pairs → int32):
// Q4_1 a pair of blocks a step (dotQ4_1AVX512), Q8_0 a block. The integer sums equal the
// plain-Go kernels' exactly; only the float32 additions come in another order. The loops index
// through unsafe.Add after one length check, so that no bounds check or call sits in them.
// CPUs with AVX2 and FMA but no AVX-512 get the same kernels in 256-bit registers
// (quant_avx2.go).

import (
	"math"
	"unsafe"

	"simd/archsimd"
)

// simdQuantKernels is the kernel set the CPU runs best: AVX-512 (this file) when present, else
// AVX2 with FMA (quant_avx2.go), else none (ok false: the plain-Go kernels).
func simdQuantKernels() (quantKernels, bool) {
	if !archsimd.X86.AVX512() {
		return avx2QuantKernels()
	}
	return quantKernels{name: "avx512", quantise: quantiseXAVX512, q4_1: dotQ4_1AVX512, q8_0: dotQ8_0AVX512, layout: simdLayout, dequant: dequantRowAVX512}, true
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

// halves16 converts the 16 halves at p+off to float32 times 2⁻¹¹² (f16 without its rebiasing
// multiplication). Sign-extended to 32 bits and shifted left by 13, a half has its sign at bit
// 31, copies of it at bits 30…28 (cleared by the mask) and its exponent and mantissa bits at
// float32's places: the value times 2⁻¹¹², exactly. The kernels multiply it by x's scale times
// 2¹¹² (scaleForKernels) instead of by 2¹¹² and then by the scale: the same product, one
// multiplication less per 16 scales. And the result is finite whatever the 16 halves hold (its
// exponent field is at most 31), so the lanes past a row's last block (any bytes: the row's
// next scales or quants) need no mask: x's scales there are zero, and so are their products.
// BenchmarkQuantMatVec Q4_1, 576 columns (18 blocks): 30.3 → 23.7 cpu-µs.
func halves16(p unsafe.Pointer, off int) archsimd.Float32x16 {
	h := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(p, off))).ExtendToInt32().ShiftAllLeft(13)
	return h.And(archsimd.BroadcastInt32x16(-0x70002000)).AsFloat32x16() // 0x8fffe000
}

// quantiseXAVX512 is quantiseX a block (two vectors) at a time: the same d and q (the same
// float32 product x·(qMax/a) rounded to even), s summed in another order; a block whose sum
// is NaN (a NaN in x, which VMAXPS may pass over) gets d = NaN and zero q, as quantiseX does,
// so that y is NaN as the float32 product's is.
func quantiseXAVX512(x []float32, a *qAct) {
	nb := a.resize(x)
	mag := archsimd.BroadcastUint32x16(0x7fffffff)
	for b := range nb {
		x0 := archsimd.LoadFloat32x16((*[16]float32)(x[32*b : 32*b+16]))
		x1 := archsimd.LoadFloat32x16((*[16]float32)(x[32*b+16 : 32*b+32]))
		m := x0.AsUint32x16().And(mag).AsFloat32x16().Max(x1.AsUint32x16().And(mag).AsFloat32x16())
		m8 := m.GetLo().Max(m.GetHi())
		m4 := m8.GetLo().Max(m8.GetHi())
		amax := max(m4.GetElem(0), m4.GetElem(1), m4.GetElem(2), m4.GetElem(3))
		sum := sum16(x0.Add(x1))
		a.s[b] = sum
		qb := a.q[32*b : 32*b+32]
		switch {
		case sum != sum:
			a.d[b] = sum // NaN
			clear(qb)
		case amax < tinyBlock:
			a.d[b] = 0
			clear(qb)
		default:
			a.d[b] = amax / qMax
			inv := archsimd.BroadcastFloat32x16(qMax / amax)
			x0.Mul(inv).RoundToEvenScaled(0).ConvertToInt32().TruncateToInt16().Store((*[16]int16)(qb[:16]))
			x1.Mul(inv).RoundToEvenScaled(0).ConvertToInt32().TruncateToInt16().Store((*[16]int16)(qb[16:32]))
		}
	}
}

// scaleForKernels fills a.dx, a.sx and a.post for the kernels, which multiply halves16's raw
// scales (a weight scale times 2⁻¹¹²) by them: d and s times 2^e, e = 112 (the products are then
// the weight scale times d or s, exactly, as f16's value times d or s would be; post = 1) unless
// a block's |d| or |s| reaches 2¹⁵, where d·2¹¹² could overflow: then e is as much smaller
// (post = 2^(112−e), by which the kernels multiply each row's sum; the same value, but for the
// products' rounding near float32's smallest normals). NaN and ±Inf stay what they are, and make
// y NaN or ±Inf as before.
func scaleForKernels(a *qAct) {
	// The largest finite |d| or |s|, on the bits: for non-negative floats their order is the
	// numbers' (a loop of float64 conversions was ~0.5 µs of a 1536-column product's x).
	var bigBits uint32
	const finite = 0x7f7fffff // math.MaxFloat32's bits: above it, ±Inf and NaN
	for b := range a.nb {
		if v := math.Float32bits(a.d[b]) &^ (1 << 31); v <= finite {
			bigBits = max(bigBits, v)
		}
		if v := math.Float32bits(a.s[b]) &^ (1 << 31); v <= finite {
			bigBits = max(bigBits, v)
		}
	}
	big := math.Float32frombits(bigBits)
	e := 112
	if _, k := math.Frexp(float64(big)); k+e > 127 { // big < 2^k
		e = 127 - k
	}
	f := float32(math.Ldexp(1, e))
	a.dx, a.sx = grow(a.dx, len(a.d)), grow(a.sx, len(a.s))
	for i, d := range a.d {
		a.dx[i], a.sx[i] = d*f, a.s[i]*f
	}
	a.post = float32(math.Ldexp(1, 112-e))
}

// pairFirst is the first block of pair slot p of a row of nb ≥ 2 blocks: slot p covers blocks
// 2p and 2p+1, except the last slot of an odd nb, which covers nb−2 and nb−1 (its x for nb−2
// zero: that block is the previous slot's).
func pairFirst(p, nb int) int { return min(2*p, nb-2) }

// simdLayout lays a.q out for the Q4_1 kernel in a.lay [64 × ⌈nb/2⌉]: per pair slot p (blocks
// f = pairFirst(p) and f+1) the first 16 values of block f, of block f+1, then the last 16 of
// each (the weights' low and high nibbles), a block of the previous slot zero; and a.perm
// [16 × ⌈nb/2⌉], per slot the lanes of its chunk's scales (blocks 2p, 2p+1 mod 16; the odd
// tail's block nb−1 on all 16, its first 8 lanes' sums being zero). The Q8_0 kernel reads a.q.
func simdLayout(q4 bool, a *qAct) {
	scaleForKernels(a)
	if !q4 || a.nb < 2 {
		return
	}
	nb, slots := a.nb, (a.nb+1)/2
	a.lay = grow(a.lay, 64*slots)
	a.perm = grow(a.perm, 16*slots)
	for p := range slots {
		for i := range 16 {
			a.perm[16*p+i] = uint32(2*p+i/8) % 16
			if 2*p+1 == nb { // the odd tail
				a.perm[16*p+i] = uint32(nb-1) % 16
			}
		}
		f, dst := pairFirst(p, nb), a.lay[64*p:64*p+64]
		for k, b := range [2]int{f, f + 1} {
			if b < 2*p { // the odd tail's first block: counted in slot p−1
				clear(dst[16*k : 16*k+16])
				clear(dst[32+16*k : 32+16*k+16])
				continue
			}
			copy(dst[16*k:16*k+16], a.q[32*b:32*b+16])
			copy(dst[32+16*k:32+16*k+16], a.q[32*b+16:32*b+32])
		}
	}
}

// dotQ4_1AVX512: y[i] = Σ_b d_w·d_a·Σ q4·q + m_w·Σx for the len(y) rows at rows, 4 rows and
// 2 blocks a step (a.lay, a.perm from simdLayout). The scales come 16 blocks (a chunk) at a
// time: d_w·d_a in a register, Σ_b m_w·Σx into the row's accumulator; then each pair slot of
// the chunk: its 32 bytes of nibbles widened to 32 uint16, split into low and high nibbles,
// each multiplied by x's int16 and summed in pairs by VPMADDWD (→ 8 int32 lanes per block),
// converted to float32 and multiplied by the blocks' scales (moved to 8 lanes each by one
// permutation of the chunk's register, a.perm) into the accumulator. Rows of fewer than 2
// blocks go to the plain-Go kernel: the vector loads of the scales read 32 bytes.
func dotQ4_1AVX512(rows []byte, a *qAct, y []float32) {
	nb, n := a.nb, len(y)
	if nb < 2 || n == 0 {
		goQuantKernels.q4_1(rows, a, y)
		return
	}
	rb, pad, slots := 20*nb, (nb+15)&^15, (nb+1)/2
	rows = rows[:n*rb]
	ad, as, post := a.dx[:pad], a.sx[:pad], archsimd.BroadcastFloat32x16(a.post) // before any 512-bit instruction (store4)
	base := unsafe.Pointer(unsafe.SliceData(rows))
	lay := unsafe.Pointer(unsafe.SliceData(a.lay[:64*slots]))
	perm := unsafe.Pointer(unsafe.SliceData(a.perm[:16*slots]))
	low := archsimd.BroadcastUint16x32(0x0f)
	// step adds the pair from block f of row p to acc, its blocks' scales at lanes perm of sc.
	step := func(p unsafe.Pointer, xl, xh archsimd.Int16x32, sc archsimd.Float32x16, perm archsimd.Uint32x16, f int, acc archsimd.Float32x16) archsimd.Float32x16 {
		w := archsimd.LoadUint8x32((*[32]uint8)(unsafe.Add(p, 4*nb+16*f))).ExtendToUint16()
		// The high nibbles by an arithmetic shift (VPSRAW, which takes the count as an immediate;
		// the same values: w ≤ 255): Go 1.26 compiles the logical one (VPSRLW) with its count moved
		// into a vector register by a legacy-SSE MOVQ in the loop (quant_avx2.go's note on legacy SSE).
		s := w.And(low).AsInt16x32().DotProductPairs(xl).Add(w.AsInt16x32().ShiftAllRight(4).DotProductPairs(xh))
		return s.ConvertToFloat32().MulAdd(sc.Permute(perm), acc)
	}
	for r := 0; r < n; r += 4 {
		p0, p1, p2, p3 := rows4(base, r, n, rb)
		archsimd.ClearAVXUpperBits() // the call's return zeroes X15 by a legacy-SSE XORPS (store4)
		prefetchAhead(base, r, n, rb)
		var acc0, acc1, acc2, acc3 archsimd.Float32x16
		for b := 0; b < nb; b += 16 { // chunk b/16: blocks b … b+15, slots b/2 … b/2+7
			dA, sA := archsimd.LoadFloat32x16((*[16]float32)(ad[b:b+16])), archsimd.LoadFloat32x16((*[16]float32)(as[b:b+16]))
			sc0, sc1 := halves16(p0, 2*b).Mul(dA), halves16(p1, 2*b).Mul(dA)
			sc2, sc3 := halves16(p2, 2*b).Mul(dA), halves16(p3, 2*b).Mul(dA)
			acc0 = halves16(p0, 2*nb+2*b).MulAdd(sA, acc0)
			acc1 = halves16(p1, 2*nb+2*b).MulAdd(sA, acc1)
			acc2 = halves16(p2, 2*nb+2*b).MulAdd(sA, acc2)
			acc3 = halves16(p3, 2*nb+2*b).MulAdd(sA, acc3)
			for p := b / 2; p < min(b/2+8, slots); p++ {
				f := pairFirst(p, nb)
				xl := archsimd.LoadInt16x32((*[32]int16)(unsafe.Add(lay, 128*p)))
				xh := archsimd.LoadInt16x32((*[32]int16)(unsafe.Add(lay, 128*p+64)))
				pm := archsimd.LoadUint32x16((*[16]uint32)(unsafe.Add(perm, 64*p)))
				acc0 = step(p0, xl, xh, sc0, pm, f, acc0)
				acc1 = step(p1, xl, xh, sc1, pm, f, acc1)
				acc2 = step(p2, xl, xh, sc2, pm, f, acc2)
				acc3 = step(p3, xl, xh, sc3, pm, f, acc3)
			}
		}
		store4(y, r, post, acc0, acc1, acc2, acc3)
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// rows4 returns the addresses of rows r…r+3 of the n rows (rb bytes each) at base, the last
// row repeated past n: the kernels compute 4 rows a step.
func rows4(base unsafe.Pointer, r, n, rb int) (p0, p1, p2, p3 unsafe.Pointer) {
	return unsafe.Add(base, r*rb), unsafe.Add(base, min(r+1, n-1)*rb), unsafe.Add(base, min(r+2, n-1)*rb), unsafe.Add(base, min(r+3, n-1)*rb)
}

// store4 writes the lane sums of acc0…acc3 times post (any lane of it) to y[r…r+3], those
// before len(y): the four sums together, halves added, then three pairwise additions of the
// four vectors' lanes (VHADDPS) and the two halves of the last — about a third of the
// operations of four separate sums (sum16). No scalar float instruction and no 128-bit value
// kept across the loop: Go moves scalar floats and spills 128-bit vectors by legacy-SSE
// instructions (MOVUPS), which on Intel cores pay for the dirty upper halves of the ZMM
// registers every time — with post a float32 and the tail stored lane by lane, the Q4_1 product
// of BenchmarkQuantMatVec ran at 212 cpu-µs on a 2-core Intel Xeon, 7× the AVX2 kernels' time
// (quant_avx2.go's note). Hence post as 512 bits, broadcast before the kernel's first 512-bit
// instruction, and the tail by a masked store.
func store4(y []float32, r int, post archsimd.Float32x16, acc0, acc1, acc2, acc3 archsimd.Float32x16) {
	v0, v1 := acc0.GetLo().Add(acc0.GetHi()), acc1.GetLo().Add(acc1.GetHi())
	v2, v3 := acc2.GetLo().Add(acc2.GetHi()), acc3.GetLo().Add(acc3.GetHi())
	c := v0.AddPairsGrouped(v1).AddPairsGrouped(v2.AddPairsGrouped(v3)) // per 128 bits: the 4 rows' partial sums
	storePartF32x4(c.GetLo().Add(c.GetHi()).Mul(post.GetLo().GetLo()), y[r:])
}

// laneOf[i] broadcasts lane i of a vector by Permute.
var laneOf = func() (t [16][16]uint32) {
	for i := range t {
		for j := range t[i] {
			t[i][j] = uint32(i)
		}
	}
	return t
}()

// dotQ8_0AVX512: y[i] = Σ_b d_w·d_a·Σ q8·q for the len(y) rows at rows, 4 rows and a block a
// step: the scales d_w·d_a 16 blocks (a chunk) at a time in a register; a block's 32 int8
// widened to int16, multiplied by x's int16 and summed in pairs by VPMADDWD (→ 16 int32
// lanes), converted and multiplied by the block's scale (broadcast by permutation).
func dotQ8_0AVX512(rows []byte, a *qAct, y []float32) {
	nb, n := a.nb, len(y)
	if nb == 0 || n == 0 {
		goQuantKernels.q8_0(rows, a, y)
		return
	}
	rb, pad := 34*nb, (nb+15)&^15
	rows = rows[:n*rb]
	ad, post := a.dx[:pad], archsimd.BroadcastFloat32x16(a.post) // before any 512-bit instruction (store4)
	base := unsafe.Pointer(unsafe.SliceData(rows))
	x := unsafe.Pointer(unsafe.SliceData(a.q[:32*nb]))
	step := func(p unsafe.Pointer, xb archsimd.Int16x32, sc archsimd.Float32x16, lane archsimd.Uint32x16, b int, acc archsimd.Float32x16) archsimd.Float32x16 {
		w := archsimd.LoadInt8x32((*[32]int8)(unsafe.Add(p, 2*nb+32*b))).ExtendToInt16()
		return w.DotProductPairs(xb).ConvertToFloat32().MulAdd(sc.Permute(lane), acc)
	}
	for r := 0; r < n; r += 4 {
		p0, p1, p2, p3 := rows4(base, r, n, rb)
		archsimd.ClearAVXUpperBits() // the call's return zeroes X15 by a legacy-SSE XORPS (store4)
		prefetchAhead(base, r, n, rb)
		var acc0, acc1, acc2, acc3 archsimd.Float32x16
		for c := 0; c < nb; c += 16 { // 32 bytes of scales from 2c: within the row (34·nb ≥ 2·nb + 30)
			dA := archsimd.LoadFloat32x16((*[16]float32)(ad[c : c+16]))
			sc0, sc1 := halves16(p0, 2*c).Mul(dA), halves16(p1, 2*c).Mul(dA)
			sc2, sc3 := halves16(p2, 2*c).Mul(dA), halves16(p3, 2*c).Mul(dA)
			for b := c; b < min(c+16, nb); b++ {
				xb := archsimd.LoadInt16x32((*[32]int16)(unsafe.Add(x, 64*b)))
				lane := archsimd.LoadUint32x16(&laneOf[b-c])
				acc0 = step(p0, xb, sc0, lane, b, acc0)
				acc1 = step(p1, xb, sc1, lane, b, acc1)
				acc2 = step(p2, xb, sc2, lane, b, acc2)
				acc3 = step(p3, xb, sc3, lane, b, acc3)
			}
		}
		store4(y, r, post, acc0, acc1, acc2, acc3)
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
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
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

func sum16(v archsimd.Float32x16) float32 {
	v8 := v.GetLo().Add(v.GetHi())
	v4 := v8.GetLo().Add(v8.GetHi())
	v4 = v4.AddPairs(v4) // (0+1, 2+3, 0+1, 2+3)
	return v4.GetElem(0) + v4.GetElem(1)
}

// halves16Into is halves16 times 2¹¹² (f16's values) for tests: dst [16] from src [32 bytes].
func halves16Into(src []byte, dst []float32) bool {
	if !archsimd.X86.AVX512() {
		return false
	}
	halves16(unsafe.Pointer(&src[:32][0]), 0).Mul(archsimd.BroadcastFloat32x16(0x1p112)).Store((*[16]float32)(dst[:16]))
	return true
}

// prefetchRows is how many rows ahead of the 4 they compute the kernels ask for: the rows then
// come from memory while the kernel works on others. Without it the kernels read the ~96 MB a
// SmolLM2 token needs at ~6 GB/s per core (the hardware prefetchers miss the 4 rows' interleaved
// streams); with it ~12 (BenchmarkQuantStream, thread CPU time; 4, 8, 16 and 32 rows ahead
// alike within the machine's noise).
const prefetchRows = 8

// prefetchAhead prefetches rows r+prefetchRows … r+prefetchRows+3 (those before n; rows of rb
// bytes at base) for the step at r; at r = 0 also rows 0 … prefetchRows−1.
func prefetchAhead(base unsafe.Pointer, r, n, rb int) {
	lo, hi := (r+prefetchRows)*rb, min(r+prefetchRows+4, n)*rb
	if r == 0 {
		lo = 0
	}
	if lo < hi {
		prefetchLines(unsafe.Add(base, lo), hi-lo)
	}
}
