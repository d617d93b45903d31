//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// AVX2 (+FMA) packed-row kernels: quant_simd.go's AVX-512 kernels in 256-bit registers, for the
// CPUs without AVX-512 (most laptops, AMD EPYC before Zen 4), which otherwise run the plain-Go
// kernels. The same arithmetic: a row's f16 scales come 8 at a time (halves8, quant_simd's bit
// trick on 8 lanes), multiplied by x's block scales times 2^e (scaleForKernels); then each
// block's integer sum from VPMADDWD (int16 pairs → int32), one block a step (Q4_1's 16 bytes of
// nibbles widen to one Int16x16 of each half, so x's q needs no other layout), converted to
// float32 and multiplied by the block's scale (broadcast by VPERMPS) into the row's accumulator,
// 4 rows a step sharing x's loads. The integer partial sums equal the plain-Go kernels' exactly
// (each lane's int32 — at most 4·15·32767 for Q4_1, 4·128·32767 < 2²⁴ for Q8_0 — converts to
// float32 exactly); only the float32 additions come in another order. Every method used is AVX,
// AVX2 or FMA (archsimd's ops_amd64.go names each one's feature); AVX-512 ones would die of
// SIGILL on the CPUs these serve.
//
// Legacy SSE. Go compiles scalar float32 code, 128-bit vector spills (MOVUPS) and the X15
// re-zeroing after a call to assembly (XORPS) to legacy-SSE instructions, and Go 1.26 emits no
// VZEROUPPER: one of them while the YMM registers' upper halves are dirty cost ~150–400 ns on
// this AMD EPYC (a 256-bit loop followed by scalar float code: 80 ns an iteration with
// archsimd.ClearAVXUpperBits between them, 360–480 without). So these kernels run no scalar
// float code amid their 256-bit instructions (scales broadcast from vectors by VPERMPS, tails
// by masked stores, quantise's scalar part between two vector passes), clear the upper halves
// before calling prefetchAhead and before returning, and shift logically only by VPSRAW on
// non-negative lanes (Go 1.26 has no immediate form of VPSRLW: its count came through a legacy
// MOVQ, and the Q4_1 kernel took 1100 cpu-µs instead of 230).
//
// BenchmarkQuantMatVec (1536×576, one thread, AMD EPYC, a loaded machine): Q4_1 1010–1390
// cpu-µs plain Go → 40–70 AVX2; Q8_0 940–1140 → 70–105.

import (
	"unsafe"

	"simd/archsimd"
)

// avx2QuantKernels is the AVX2 kernel set, when the CPU has AVX2 and FMA (vecAVX2).
// simdQuantKernels picks it where AVX-512 is absent; tests call it on any CPU that has it.
func avx2QuantKernels() (quantKernels, bool) {
	if !vecAVX2 {
		return quantKernels{}, false
	}
	return quantKernels{name: "avx2", quantise: quantiseXAVX2, q4_1: dotQ4_1AVX2, q8_0: dotQ8_0AVX2, layout: avx2Layout, dequant: dequantRowAVX2}, true
}

// halves8 is halves16 on 8 lanes: the 8 halves at p+off as float32 times 2⁻¹¹², exactly, and
// finite whatever the 16 bytes hold (halves16 says why: the kernels then need no mask past a
// row's last block). VPMOVSXWD, VPSLLD, VPAND: AVX2.
func halves8(p unsafe.Pointer, off int) archsimd.Float32x8 {
	h := archsimd.LoadInt16x8((*[8]int16)(unsafe.Add(p, off))).ExtendToInt32().ShiftAllLeft(13)
	return h.And(archsimd.BroadcastInt32x8(-0x70002000)).AsFloat32x8() // 0x8fffe000
}

// quantiseXAVX2 is quantiseX with its per-element work in vectors: the same d and q (the
// float32 product x·(qMax/a) rounded to even, then its int32 truncated to 16 bits as the plain-Go
// conversion and VPMOVDW do — masked to 16 bits and packed by VPACKUSDW, which cannot saturate
// then), s summed in another order; a block whose sum is NaN gets d = NaN and zero q, a block
// below tinyBlock d = 0 and zero q. In three passes, so that no scalar float instruction runs
// while the upper halves of the YMM registers are dirty (legacy SSE: the file's note): the
// blocks' partial maxima and sums (4 lanes each, into a.part), then d, s and 1/scale per block
// in scalar Go (0 for the blocks that become zeros: x·0 rounds to q = 0, and NaN or ±Inf·0 to
// NaN, whose int32 0x80000000 truncates to 0 as in quantiseX), then q.
func quantiseXAVX2(x []float32, a *qAct) {
	nb := a.resize(x)
	pad := (nb + 7) &^ 7
	a.part = grow(a.part, 8*nb+pad) // [nb][4 maxima, 4 sums], then inv [pad]
	part, inv := a.part[:8*nb], a.part[8*nb:]
	clear(inv[nb:])
	mag := archsimd.BroadcastUint32x8(0x7fffffff)
	abs := func(v archsimd.Float32x8) archsimd.Float32x8 { return v.AsUint32x8().And(mag).AsFloat32x8() }
	for b := range nb {
		xb := x[32*b : 32*b+32]
		x0 := archsimd.LoadFloat32x8((*[8]float32)(xb[0:8]))
		x1 := archsimd.LoadFloat32x8((*[8]float32)(xb[8:16]))
		x2 := archsimd.LoadFloat32x8((*[8]float32)(xb[16:24]))
		x3 := archsimd.LoadFloat32x8((*[8]float32)(xb[24:32]))
		m := abs(x0).Max(abs(x1)).Max(abs(x2).Max(abs(x3)))
		v := x0.Add(x1).Add(x2.Add(x3))
		m.GetLo().Max(m.GetHi()).Store((*[4]float32)(part[8*b : 8*b+4]))
		v.GetLo().Add(v.GetHi()).Store((*[4]float32)(part[8*b+4 : 8*b+8]))
	}
	archsimd.ClearAVXUpperBits()
	for b := range nb {
		p := part[8*b : 8*b+8]
		amax, sum := max(p[0], p[1], p[2], p[3]), (p[4]+p[5])+(p[6]+p[7])
		a.s[b] = sum
		switch {
		case sum != sum:
			a.d[b], inv[b] = sum, 0 // NaN
		case amax < tinyBlock:
			a.d[b], inv[b] = 0, 0
		default:
			a.d[b], inv[b] = amax/qMax, qMax/amax
		}
	}
	low16 := archsimd.BroadcastInt32x8(0xffff)
	for c := 0; c < nb; c += 8 {
		iv8 := archsimd.LoadFloat32x8((*[8]float32)(inv[c : c+8]))
		for b := c; b < min(c+8, nb); b++ {
			iv := iv8.Permute(archsimd.LoadUint32x8(&laneOf8[b-c]))
			xb, qb := x[32*b:32*b+32], a.q[32*b:32*b+32]
			for k := range 4 {
				q := archsimd.LoadFloat32x8((*[8]float32)(xb[8*k : 8*k+8])).Mul(iv).RoundToEven().ConvertToInt32().And(low16)
				q.GetLo().SaturateToUint16Concat(q.GetHi()).AsInt16x8().Store((*[8]int16)(qb[8*k : 8*k+8]))
			}
		}
	}
	archsimd.ClearAVXUpperBits()
}

// avx2Layout: the AVX2 kernels read a.q as it is (a Q4_1 block's first 16 values meet its low
// nibbles, the last 16 its high ones), and x's scales from scaleForKernels.
func avx2Layout(_ bool, a *qAct) { scaleForKernels(a) }

// laneOf8[i] broadcasts lane i of a Float32x8 by Permute.
var laneOf8 = func() (t [8][8]uint32) {
	for i := range t {
		for j := range t[i] {
			t[i][j] = uint32(i)
		}
	}
	return t
}()

// dotQ4_1AVX2: y[i] = Σ_b d_w·d_a·Σ q4·q + m_w·Σx for the len(y) rows at rows, 4 rows and a
// block a step. The scales come 8 blocks (a chunk) at a time: d_w·d_a in a register, Σ_b m_w·Σx
// into the row's accumulator; then each block of the chunk: its 16 bytes of nibbles widened to
// 16 uint16, split into low and high nibbles, each multiplied by its half of x's block and summed
// in pairs by VPMADDWD (→ 8 int32 lanes), converted to float32 and multiplied by the block's
// scale (broadcast by VPERMPS) into the accumulator. A row of 1 block works too: the 16-byte
// reads of its scales (4 bytes) stay within its 20.
func dotQ4_1AVX2(rows []byte, a *qAct, y []float32) {
	nb, n := a.nb, len(y)
	if nb == 0 || n == 0 {
		goQuantKernels.q4_1(rows, a, y)
		return
	}
	rb, pad := 20*nb, (nb+7)&^7
	rows = rows[:n*rb]
	ad, as, post := a.dx[:pad], a.sx[:pad], archsimd.BroadcastFloat32x8(a.post) // before any 256-bit instruction (legacy SSE: the file's note)
	base := unsafe.Pointer(unsafe.SliceData(rows))
	x := unsafe.Pointer(unsafe.SliceData(a.q[:32*nb]))
	low := archsimd.BroadcastInt16x16(0x0f)
	// step adds block b of row p to acc, its scale at lane lane of sc. The high nibbles come by
	// an arithmetic shift (VPSRAW; the bytes are zero-extended, so the same as a logical one):
	// Go 1.26 encodes a constant count only for it and the left shifts, and the logical shift
	// with its count moved into an XMM register (a legacy-SSE MOVQ amid 256-bit code) took this
	// kernel 1100 cpu-µs instead of 230 (BenchmarkQuantMatVec Q4_1, AMD EPYC, before the other
	// measures of the file's note on legacy SSE).
	step := func(p unsafe.Pointer, xl, xh archsimd.Int16x16, sc archsimd.Float32x8, lane archsimd.Uint32x8, b int, acc archsimd.Float32x8) archsimd.Float32x8 {
		w := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(p, 4*nb+16*b))).ExtendToUint16().AsInt16x16()
		s := w.And(low).DotProductPairs(xl).Add(w.ShiftAllRight(4).DotProductPairs(xh))
		return s.ConvertToFloat32().MulAdd(sc.Permute(lane), acc)
	}
	for r := 0; r < n; r += 4 {
		p0, p1, p2, p3 := rows4(base, r, n, rb)
		archsimd.ClearAVXUpperBits() // the call's return zeroes X15 by a legacy-SSE XORPS
		prefetchAhead(base, r, n, rb)
		var acc0, acc1, acc2, acc3 archsimd.Float32x8
		for c := 0; c < nb; c += 8 { // 16 bytes of scales from 2c, 2nb+2c: within the row (20·nb ≥ 4·nb + 14)
			dA, sA := archsimd.LoadFloat32x8((*[8]float32)(ad[c:c+8])), archsimd.LoadFloat32x8((*[8]float32)(as[c:c+8]))
			sc0, sc1 := halves8(p0, 2*c).Mul(dA), halves8(p1, 2*c).Mul(dA)
			sc2, sc3 := halves8(p2, 2*c).Mul(dA), halves8(p3, 2*c).Mul(dA)
			acc0 = halves8(p0, 2*nb+2*c).MulAdd(sA, acc0)
			acc1 = halves8(p1, 2*nb+2*c).MulAdd(sA, acc1)
			acc2 = halves8(p2, 2*nb+2*c).MulAdd(sA, acc2)
			acc3 = halves8(p3, 2*nb+2*c).MulAdd(sA, acc3)
			for b := c; b < min(c+8, nb); b++ {
				xl := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(x, 64*b)))
				xh := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(x, 64*b+32)))
				lane := archsimd.LoadUint32x8(&laneOf8[b-c])
				acc0 = step(p0, xl, xh, sc0, lane, b, acc0)
				acc1 = step(p1, xl, xh, sc1, lane, b, acc1)
				acc2 = step(p2, xl, xh, sc2, lane, b, acc2)
				acc3 = step(p3, xl, xh, sc3, lane, b, acc3)
			}
		}
		store4x8(y, r, post, acc0, acc1, acc2, acc3)
	}
	archsimd.ClearAVXUpperBits()
}

// dotQ8_0AVX2: y[i] = Σ_b d_w·d_a·Σ q8·q for the len(y) rows at rows, 4 rows and a block a
// step: the scales d_w·d_a 8 blocks (a chunk) at a time in a register; a block's 32 int8 widened
// to two Int16x16, multiplied by x's int16 and summed in pairs by VPMADDWD, the two added
// (→ 8 int32 lanes of 4 products each), converted and multiplied by the block's scale
// (broadcast by VPERMPS).
func dotQ8_0AVX2(rows []byte, a *qAct, y []float32) {
	nb, n := a.nb, len(y)
	if nb == 0 || n == 0 {
		goQuantKernels.q8_0(rows, a, y)
		return
	}
	rb, pad := 34*nb, (nb+7)&^7
	rows = rows[:n*rb]
	ad, post := a.dx[:pad], archsimd.BroadcastFloat32x8(a.post) // before any 256-bit instruction (legacy SSE: the file's note)
	base := unsafe.Pointer(unsafe.SliceData(rows))
	x := unsafe.Pointer(unsafe.SliceData(a.q[:32*nb]))
	step := func(p unsafe.Pointer, xl, xh archsimd.Int16x16, sc archsimd.Float32x8, lane archsimd.Uint32x8, b int, acc archsimd.Float32x8) archsimd.Float32x8 {
		w0 := archsimd.LoadInt8x16((*[16]int8)(unsafe.Add(p, 2*nb+32*b))).ExtendToInt16()
		w1 := archsimd.LoadInt8x16((*[16]int8)(unsafe.Add(p, 2*nb+32*b+16))).ExtendToInt16()
		s := w0.DotProductPairs(xl).Add(w1.DotProductPairs(xh))
		return s.ConvertToFloat32().MulAdd(sc.Permute(lane), acc)
	}
	for r := 0; r < n; r += 4 {
		p0, p1, p2, p3 := rows4(base, r, n, rb)
		archsimd.ClearAVXUpperBits() // the call's return zeroes X15 by a legacy-SSE XORPS
		prefetchAhead(base, r, n, rb)
		var acc0, acc1, acc2, acc3 archsimd.Float32x8
		for c := 0; c < nb; c += 8 { // 16 bytes of scales from 2c: within the row (34·nb ≥ 2·nb + 14)
			dA := archsimd.LoadFloat32x8((*[8]float32)(ad[c : c+8]))
			sc0, sc1 := halves8(p0, 2*c).Mul(dA), halves8(p1, 2*c).Mul(dA)
			sc2, sc3 := halves8(p2, 2*c).Mul(dA), halves8(p3, 2*c).Mul(dA)
			for b := c; b < min(c+8, nb); b++ {
				xl := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(x, 64*b)))
				xh := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(x, 64*b+32)))
				lane := archsimd.LoadUint32x8(&laneOf8[b-c])
				acc0 = step(p0, xl, xh, sc0, lane, b, acc0)
				acc1 = step(p1, xl, xh, sc1, lane, b, acc1)
				acc2 = step(p2, xl, xh, sc2, lane, b, acc2)
				acc3 = step(p3, xl, xh, sc3, lane, b, acc3)
			}
		}
		store4x8(y, r, post, acc0, acc1, acc2, acc3)
	}
	archsimd.ClearAVXUpperBits()
}

// store4x8 writes the lane sums of v0…v3 times post (any lane of it) to y[r…r+3], those
// before len(y): three pairwise additions of the four vectors' lanes (VHADDPS) and the two
// halves of the last; a tail by a masked store (VMASKMOVPS), not by scalar stores, and post
// as 256 bits: the compiler spills a 128-bit vector by MOVUPS (legacy SSE: the file's note).
func store4x8(y []float32, r int, post archsimd.Float32x8, v0, v1, v2, v3 archsimd.Float32x8) {
	c := v0.AddPairsGrouped(v1).AddPairsGrouped(v2.AddPairsGrouped(v3)) // per 128 bits: the 4 rows' partial sums
	storePartF32x4(c.GetLo().Add(c.GetHi()).Mul(post.GetLo()), y[r:])
}

// dequantRowAVX2 is dequantRow 8 weights at a time: Q4_1 float32(d·q) + m (Mul, then Add),
// Q8_0 d·q — the same roundings, so the same float32 weights. A chunk of 8 blocks' scales is
// converted at once (halves8 times 2¹¹², exact; the lanes past the row's last block hold the
// next bytes of the row, converted but unused) and each block's broadcast by VPERMPS: no
// scalar float instruction amid the 256-bit ones (legacy SSE: the file's note).
func dequantRowAVX2(q4 bool, row []byte, w []float32) {
	nb := len(w) / 32
	if nb == 0 {
		return
	}
	rb := 34 * nb
	if q4 {
		rb = 20 * nb
	}
	p := unsafe.Pointer(unsafe.SliceData(row[:rb])) // 16 bytes of scales from 2c (and 2nb+2c): within the row
	wp := unsafe.Pointer(unsafe.SliceData(w[:32*nb]))
	rebias := archsimd.BroadcastFloat32x8(0x1p112)
	// store writes v's 16 int16, converted to float32 and mapped by f, at weights 32b+16·half.
	store := func(b, half int, v archsimd.Int16x16, f func(archsimd.Float32x8) archsimd.Float32x8) {
		f(v.GetLo().ExtendToInt32().ConvertToFloat32()).Store((*[8]float32)(unsafe.Add(wp, 128*b+64*half)))
		f(v.GetHi().ExtendToInt32().ConvertToFloat32()).Store((*[8]float32)(unsafe.Add(wp, 128*b+64*half+32)))
	}
	low := archsimd.BroadcastInt16x16(0x0f)
	for c := 0; c < nb; c += 8 {
		d8 := halves8(p, 2*c).Mul(rebias)
		m8 := halves8(p, 2*nb+2*c).Mul(rebias) // Q4_1's m; unused for Q8_0
		for b := c; b < min(c+8, nb); b++ {
			lane := archsimd.LoadUint32x8(&laneOf8[b-c])
			dv := d8.Permute(lane)
			if !q4 {
				scale := func(v archsimd.Float32x8) archsimd.Float32x8 { return v.Mul(dv) }
				store(b, 0, archsimd.LoadInt8x16((*[16]int8)(unsafe.Add(p, 2*nb+32*b))).ExtendToInt16(), scale)
				store(b, 1, archsimd.LoadInt8x16((*[16]int8)(unsafe.Add(p, 2*nb+32*b+16))).ExtendToInt16(), scale)
				continue
			}
			mv := m8.Permute(lane)
			affine := func(v archsimd.Float32x8) archsimd.Float32x8 { return v.Mul(dv).Add(mv) }
			qv := archsimd.LoadUint8x16((*[16]uint8)(unsafe.Add(p, 4*nb+16*b))).ExtendToUint16().AsInt16x16()
			store(b, 0, qv.And(low), affine)
			store(b, 1, qv.ShiftAllRight(4), affine) // VPSRAW: see dotQ4_1AVX2
		}
	}
	archsimd.ClearAVXUpperBits()
}

// halves8Into is halves8 times 2¹¹² (f16's values) for tests: dst [8] from src [16 bytes];
// false without AVX2.
func halves8Into(src []byte, dst []float32) bool {
	if !vecAVX2 {
		return false
	}
	halves8(unsafe.Pointer(&src[:16][0]), 0).Mul(archsimd.BroadcastFloat32x8(0x1p112)).Store((*[8]float32)(dst[:8]))
	archsimd.ClearAVXUpperBits()
	return true
}
