//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// AVX2 (+FMA) kernels for carriers in the lanes-of-8 layout (quant.Lanes8). In the planar
// layout each block's VPMADDWD pair sums fill all 8 lanes of a vector, so every block of every
// row costs a conversion to float32, a broadcast of its scale (VPERMPS) and an FMA on top of
// its integer work; on this AMD EPYC (Zen 3) those three took half the kernel's time
// (BenchmarkQuantMatVec Q4_1 1536×576, one thread: integer work alone ~26 cpu-µs of ~53). Here
// lane i of the pair sums belongs to block g+i of a group of 8, so a row's integer sums of 8
// blocks accumulate in one Int32x8 (VPADDD), converted and scaled once per group by the 8
// blocks' scales as they come (halves8 · x's scales): no broadcast at all. x's quantised values
// are laid out to match (lanes8Layout). Each lane's sum is the block's whole integer sum Σ q_w·q_a,
// exact in int32 (Q4_1 ≤ 32·15·32767, Q8_0 ≤ 32·128·32767) and converted to float32 once, as
// the plain-Go kernels convert it; the float32 additions come in another order. The last
// nb mod 8 blocks of a row (planar there) take quant_avx2.go's per-block path. The file's
// rules on legacy SSE are quant_avx2.go's.

import (
	"unsafe"

	"simd/archsimd"
)

// avx2Lanes8Kernels is the AVX2 kernel set for lanes-of-8 carriers (vecAVX2).
func avx2Lanes8Kernels() (quantKernels, bool) {
	if !vecAVX2 {
		return quantKernels{}, false
	}
	return quantKernels{name: "avx2-lanes8", quantise: quantiseXAVX2, q4_1: dotQ4_1Lanes8AVX2, q8_0: dotQ8_0Lanes8AVX2,
		layout: lanes8Layout, dequant: unlanes8Dequant(dequantRowAVX2)}, true
}

// lanes8Layout fills a.lay [32·nb] from a.q for the lanes-of-8 kernels, and x's scales
// (scaleForKernels). For each group of 8 whole blocks g … g+7 (values 32g … 32g+255):
//
//	Q4_1, step s < 8: lay[32g+32s+2i+k] = q[32(g+i)+2s+k], lay[32g+32s+16+2i+k] = q[32(g+i)+16+2s+k]
//	Q8_0, step s < 16: lay[32g+16s+2i+k] = q[32(g+i)+2s+k]
//
// (i < 8, k < 2): the values that meet the weights' bytes 2s+k of block g+i (Q4_1: its low and
// high nibbles). The last nb mod 8 blocks are copied as they are.
func lanes8Layout(q4 bool, a *qAct) {
	scaleForKernels(a)
	nb := a.nb
	a.lay = grow(a.lay, 32*nb)
	full := nb &^ 7
	copy(a.lay[32*full:], a.q[32*full:32*nb])
	// In pairs of values (uint32): pair s of block g+i goes to pair 8s+i of the group (Q8_0;
	// Q4_1: pairs s < 8 to 16s+i, pairs 8+s to 16s+8+i).
	// Each is a transpose of 8×8 pairs (transpose8x8F32 on the pairs' bits: shuffles only, no
	// arithmetic): block i's pairs s < 8 (and 8 ≤ s < 16) are row i, a row 16 pairs apart.
	// Written as loops of single moves (lanes8GroupsGo, the readable form) it was half of the
	// ~1.5 µs a product spent on x before its rows (SmolLM2's step profile: ~0.1 ms a step).
	q := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(a.q))), 16*full)
	lay := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(a.lay))), 16*full)
	for g := 0; g < 16*full; g += 128 {
		if q4 { // pairs s < 8 to 16s+i, pairs 8+s to 16s+8+i
			transpose8x8F32(q[g:], 16, lay[g:], 16)
			transpose8x8F32(q[g+8:], 16, lay[g+8:], 16)
			continue
		}
		transpose8x8F32(q[g:], 16, lay[g:], 8) // pair s to 8s+i
		transpose8x8F32(q[g+8:], 16, lay[g+64:], 8)
	}
	if full > 0 {
		archsimd.ClearAVXUpperBits() // after the stores, before the scalar code (doc.go, "Clean upper halves")
	}
	if t := nb - full; t == 2 || t == 4 { // a tail interleaved by quant.Lanes8 (1 block: as it is)
		// Vector L (8 lanes j: block f + j mod t, pair s = (8/t)·L + j/t) of the tail's pairs.
		q := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(a.q[32*full:]))), 16*t)
		lay := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(a.lay[32*full:]))), 16*t)
		for j := range 8 {
			i, u := j%t, j/t
			for L := range 2 * t {
				if q4 { // t vectors of low-nibble values, each followed by its high-nibble ones
					if L < t {
						lay[16*L+j], lay[16*L+8+j] = q[16*i+8/t*L+u], q[16*i+8+8/t*L+u]
					}
				} else {
					lay[8*L+j] = q[16*i+8/t*L+u]
				}
			}
		}
	}
}

// q4Pairs is the pair sums of 16 bytes of nibbles at w (widened to 16 bits) with x's values:
// the low nibbles times xl plus the high ones times xh (VPMADDWD; the high nibbles by VPSRAW:
// see dotQ4_1AVX2).
func q4Pairs(w unsafe.Pointer, xl, xh, low archsimd.Int16x16) archsimd.Int32x8 {
	v := archsimd.LoadUint8x16((*[16]uint8)(w)).ExtendToUint16().AsInt16x16()
	return v.And(low).DotProductPairs(xl).Add(v.ShiftAllRight(4).DotProductPairs(xh))
}

// q8Pairs is the pair sums of 16 int8 at w (widened to 16 bits) with x's values.
func q8Pairs(w unsafe.Pointer, x archsimd.Int16x16) archsimd.Int32x8 {
	return archsimd.LoadInt8x16((*[16]int8)(w)).ExtendToInt16().DotProductPairs(x)
}

// q4Group is the integer sums of a group of 8 blocks of 4 rows, their nibbles at w0…w3 (128
// bytes each, lanes-of-8 layout) and x's values at xc (lanes8Layout): lane i of ir is block i's
// Σ q4·q of row r. Not inlined: inside the kernel's loops the compiler kept the loop counter in
// memory (a store and a reload every step) for want of registers.
//
//go:noinline
func q4Group(w0, w1, w2, w3, xc unsafe.Pointer) (i0, i1, i2, i3 archsimd.Int32x8) {
	low := archsimd.BroadcastInt16x16(0x0f)
	for o := 0; o < 128; o += 16 { // 8 steps of 16 bytes of each row (2 of each block)
		xl := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(xc, 4*o)))
		xh := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(xc, 4*o+32)))
		i0 = i0.Add(q4Pairs(unsafe.Add(w0, o), xl, xh, low))
		i1 = i1.Add(q4Pairs(unsafe.Add(w1, o), xl, xh, low))
		i2 = i2.Add(q4Pairs(unsafe.Add(w2, o), xl, xh, low))
		i3 = i3.Add(q4Pairs(unsafe.Add(w3, o), xl, xh, low))
	}
	return
}

// q4Tail is q4Group for a tail of t = 2 or 4 blocks (16·t bytes a row): lane j of ir holds part
// of block j mod t's sum.
//
//go:noinline
func q4Tail(w0, w1, w2, w3, xc unsafe.Pointer, t int) (i0, i1, i2, i3 archsimd.Int32x8) {
	low := archsimd.BroadcastInt16x16(0x0f)
	for o := 0; o < 16*t; o += 16 {
		xl := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(xc, 4*o)))
		xh := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(xc, 4*o+32)))
		i0 = i0.Add(q4Pairs(unsafe.Add(w0, o), xl, xh, low))
		i1 = i1.Add(q4Pairs(unsafe.Add(w1, o), xl, xh, low))
		i2 = i2.Add(q4Pairs(unsafe.Add(w2, o), xl, xh, low))
		i3 = i3.Add(q4Pairs(unsafe.Add(w3, o), xl, xh, low))
	}
	return
}

// q8Tail is q4Tail for Q8_0 (32·t bytes a row).
//
//go:noinline
func q8Tail(w0, w1, w2, w3, xc unsafe.Pointer, t int) (i0, i1, i2, i3 archsimd.Int32x8) {
	for o := 0; o < 32*t; o += 16 {
		xs := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(xc, 2*o)))
		i0 = i0.Add(q8Pairs(unsafe.Add(w0, o), xs))
		i1 = i1.Add(q8Pairs(unsafe.Add(w1, o), xs))
		i2 = i2.Add(q8Pairs(unsafe.Add(w2, o), xs))
		i3 = i3.Add(q8Pairs(unsafe.Add(w3, o), xs))
	}
	return
}

// laneMod[t] moves lane j mod t of a vector to lane j (Permute): a tail's block scales to the
// lanes that hold the blocks' sums.
var laneMod = func() (m [5][8]uint32) {
	for t := 1; t <= 4; t++ {
		for j := range 8 {
			m[t][j] = uint32(j % t)
		}
	}
	return m
}()

// q8Group is q4Group for Q8_0: 256 bytes of int8 a row.
//
//go:noinline
func q8Group(w0, w1, w2, w3, xc unsafe.Pointer) (i0, i1, i2, i3 archsimd.Int32x8) {
	for o := 0; o < 256; o += 16 { // 16 steps of 16 int8 of each row (2 of each block)
		xs := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(xc, 2*o)))
		i0 = i0.Add(q8Pairs(unsafe.Add(w0, o), xs))
		i1 = i1.Add(q8Pairs(unsafe.Add(w1, o), xs))
		i2 = i2.Add(q8Pairs(unsafe.Add(w2, o), xs))
		i3 = i3.Add(q8Pairs(unsafe.Add(w3, o), xs))
	}
	return
}

// dotQ4_1Lanes8AVX2: y[i] = Σ_b d_w·d_a·Σ q4·q + m_w·Σx for the len(y) rows at rows (lanes-of-8
// layout), 4 rows a step sharing x's loads. Per group of 8 blocks and row: 8 steps of 16 bytes
// (2 bytes of each block) into an Int32x8 of the 8 blocks' integer sums, then converted,
// multiplied by the blocks' d_w·d_a and added to the row's accumulator, and Σ m_w·Σx added.
func dotQ4_1Lanes8AVX2(rows []byte, a *qAct, y []float32) {
	nb, n := a.nb, len(y)
	if nb == 0 || n == 0 {
		goQuantKernels.q4_1(rows, a, y) // no blocks (zeros) or no rows: no layout to read
		return
	}
	rb, pad, full := 20*nb, (nb+7)&^7, nb&^7
	rows = rows[:n*rb]
	ad, as, post := a.dx[:pad], a.sx[:pad], archsimd.BroadcastFloat32x8(a.post) // before any 256-bit instruction
	base := unsafe.Pointer(unsafe.SliceData(rows))
	x := unsafe.Pointer(unsafe.SliceData(a.lay[:32*nb]))
	low := archsimd.BroadcastInt16x16(0x0f)
	for r := 0; r < n; r += 4 {
		p0, p1, p2, p3 := rows4(base, r, n, rb)
		archsimd.ClearAVXUpperBits() // the call's return zeroes X15 by a legacy-SSE XORPS
		prefetchAhead(base, r, n, rb)
		var acc0, acc1, acc2, acc3 archsimd.Float32x8
		for c := 0; c < full; c += 8 {
			o := 4*nb + 16*c
			i0, i1, i2, i3 := q4Group(unsafe.Add(p0, o), unsafe.Add(p1, o), unsafe.Add(p2, o), unsafe.Add(p3, o), unsafe.Add(x, 64*c))
			dA, sA := archsimd.LoadFloat32x8((*[8]float32)(ad[c:c+8])), archsimd.LoadFloat32x8((*[8]float32)(as[c:c+8]))
			acc0 = halves8(p0, 2*nb+2*c).MulAdd(sA, i0.ConvertToFloat32().MulAdd(halves8(p0, 2*c).Mul(dA), acc0))
			acc1 = halves8(p1, 2*nb+2*c).MulAdd(sA, i1.ConvertToFloat32().MulAdd(halves8(p1, 2*c).Mul(dA), acc1))
			acc2 = halves8(p2, 2*nb+2*c).MulAdd(sA, i2.ConvertToFloat32().MulAdd(halves8(p2, 2*c).Mul(dA), acc2))
			acc3 = halves8(p3, 2*nb+2*c).MulAdd(sA, i3.ConvertToFloat32().MulAdd(halves8(p3, 2*c).Mul(dA), acc3))
		}
		if c, t := full, nb-full; t == 2 || t == 4 { // the last t blocks, interleaved: lane j holds block c + j mod t
			dA, sA := archsimd.LoadFloat32x8((*[8]float32)(ad[c:c+8])), archsimd.LoadFloat32x8((*[8]float32)(as[c:c+8]))
			o := 4*nb + 16*c
			i0, i1, i2, i3 := q4Tail(unsafe.Add(p0, o), unsafe.Add(p1, o), unsafe.Add(p2, o), unsafe.Add(p3, o), unsafe.Add(x, 64*c), t)
			lanes := archsimd.LoadUint32x8(&laneMod[t])
			acc0 = halves8(p0, 2*nb+2*c).MulAdd(sA, i0.ConvertToFloat32().MulAdd(halves8(p0, 2*c).Mul(dA).Permute(lanes), acc0))
			acc1 = halves8(p1, 2*nb+2*c).MulAdd(sA, i1.ConvertToFloat32().MulAdd(halves8(p1, 2*c).Mul(dA).Permute(lanes), acc1))
			acc2 = halves8(p2, 2*nb+2*c).MulAdd(sA, i2.ConvertToFloat32().MulAdd(halves8(p2, 2*c).Mul(dA).Permute(lanes), acc2))
			acc3 = halves8(p3, 2*nb+2*c).MulAdd(sA, i3.ConvertToFloat32().MulAdd(halves8(p3, 2*c).Mul(dA).Permute(lanes), acc3))
		} else if c < nb { // 1, 3, 5, 6 or 7 blocks, planar: a block a step (dotQ4_1AVX2)
			dA, sA := archsimd.LoadFloat32x8((*[8]float32)(ad[c:c+8])), archsimd.LoadFloat32x8((*[8]float32)(as[c:c+8]))
			sc0, sc1 := halves8(p0, 2*c).Mul(dA), halves8(p1, 2*c).Mul(dA)
			sc2, sc3 := halves8(p2, 2*c).Mul(dA), halves8(p3, 2*c).Mul(dA)
			acc0 = halves8(p0, 2*nb+2*c).MulAdd(sA, acc0)
			acc1 = halves8(p1, 2*nb+2*c).MulAdd(sA, acc1)
			acc2 = halves8(p2, 2*nb+2*c).MulAdd(sA, acc2)
			acc3 = halves8(p3, 2*nb+2*c).MulAdd(sA, acc3)
			for b := c; b < nb; b++ {
				xl := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(x, 64*b)))
				xh := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(x, 64*b+32)))
				lane := archsimd.LoadUint32x8(&laneOf8[b-c])
				o := 4*nb + 16*b
				acc0 = q4Pairs(unsafe.Add(p0, o), xl, xh, low).ConvertToFloat32().MulAdd(sc0.Permute(lane), acc0)
				acc1 = q4Pairs(unsafe.Add(p1, o), xl, xh, low).ConvertToFloat32().MulAdd(sc1.Permute(lane), acc1)
				acc2 = q4Pairs(unsafe.Add(p2, o), xl, xh, low).ConvertToFloat32().MulAdd(sc2.Permute(lane), acc2)
				acc3 = q4Pairs(unsafe.Add(p3, o), xl, xh, low).ConvertToFloat32().MulAdd(sc3.Permute(lane), acc3)
			}
		}
		store4x8(y, r, post, acc0, acc1, acc2, acc3)
	}
	archsimd.ClearAVXUpperBits()
}

// dotQ8_0Lanes8AVX2: y[i] = Σ_b d_w·d_a·Σ q8·q for the len(y) rows at rows (lanes-of-8 layout),
// 4 rows a step: per group of 8 blocks and row, 16 steps of 16 int8 (2 of each block) into an
// Int32x8 of the 8 blocks' integer sums, converted and multiplied by the blocks' d_w·d_a.
func dotQ8_0Lanes8AVX2(rows []byte, a *qAct, y []float32) {
	nb, n := a.nb, len(y)
	if nb == 0 || n == 0 {
		goQuantKernels.q8_0(rows, a, y)
		return
	}
	rb, pad, full := 34*nb, (nb+7)&^7, nb&^7
	rows = rows[:n*rb]
	ad, post := a.dx[:pad], archsimd.BroadcastFloat32x8(a.post) // before any 256-bit instruction
	base := unsafe.Pointer(unsafe.SliceData(rows))
	x := unsafe.Pointer(unsafe.SliceData(a.lay[:32*nb]))
	for r := 0; r < n; r += 4 {
		p0, p1, p2, p3 := rows4(base, r, n, rb)
		archsimd.ClearAVXUpperBits() // the call's return zeroes X15 by a legacy-SSE XORPS
		prefetchAhead(base, r, n, rb)
		var acc0, acc1, acc2, acc3 archsimd.Float32x8
		for c := 0; c < full; c += 8 {
			o := 2*nb + 32*c
			i0, i1, i2, i3 := q8Group(unsafe.Add(p0, o), unsafe.Add(p1, o), unsafe.Add(p2, o), unsafe.Add(p3, o), unsafe.Add(x, 64*c))
			dA := archsimd.LoadFloat32x8((*[8]float32)(ad[c : c+8]))
			acc0 = i0.ConvertToFloat32().MulAdd(halves8(p0, 2*c).Mul(dA), acc0)
			acc1 = i1.ConvertToFloat32().MulAdd(halves8(p1, 2*c).Mul(dA), acc1)
			acc2 = i2.ConvertToFloat32().MulAdd(halves8(p2, 2*c).Mul(dA), acc2)
			acc3 = i3.ConvertToFloat32().MulAdd(halves8(p3, 2*c).Mul(dA), acc3)
		}
		if c, t := full, nb-full; t == 2 || t == 4 { // the last t blocks, interleaved: lane j holds block c + j mod t
			dA := archsimd.LoadFloat32x8((*[8]float32)(ad[c : c+8]))
			o := 2*nb + 32*c
			i0, i1, i2, i3 := q8Tail(unsafe.Add(p0, o), unsafe.Add(p1, o), unsafe.Add(p2, o), unsafe.Add(p3, o), unsafe.Add(x, 64*c), t)
			lanes := archsimd.LoadUint32x8(&laneMod[t])
			acc0 = i0.ConvertToFloat32().MulAdd(halves8(p0, 2*c).Mul(dA).Permute(lanes), acc0)
			acc1 = i1.ConvertToFloat32().MulAdd(halves8(p1, 2*c).Mul(dA).Permute(lanes), acc1)
			acc2 = i2.ConvertToFloat32().MulAdd(halves8(p2, 2*c).Mul(dA).Permute(lanes), acc2)
			acc3 = i3.ConvertToFloat32().MulAdd(halves8(p3, 2*c).Mul(dA).Permute(lanes), acc3)
		} else if c < nb { // 1, 3, 5, 6 or 7 blocks, planar: a block a step (dotQ8_0AVX2)
			dA := archsimd.LoadFloat32x8((*[8]float32)(ad[c : c+8]))
			sc0, sc1 := halves8(p0, 2*c).Mul(dA), halves8(p1, 2*c).Mul(dA)
			sc2, sc3 := halves8(p2, 2*c).Mul(dA), halves8(p3, 2*c).Mul(dA)
			for b := c; b < nb; b++ {
				xl := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(x, 64*b)))
				xh := archsimd.LoadInt16x16((*[16]int16)(unsafe.Add(x, 64*b+32)))
				lane := archsimd.LoadUint32x8(&laneOf8[b-c])
				o := 2*nb + 32*b
				acc0 = q8Pairs(unsafe.Add(p0, o), xl).Add(q8Pairs(unsafe.Add(p0, o+16), xh)).ConvertToFloat32().MulAdd(sc0.Permute(lane), acc0)
				acc1 = q8Pairs(unsafe.Add(p1, o), xl).Add(q8Pairs(unsafe.Add(p1, o+16), xh)).ConvertToFloat32().MulAdd(sc1.Permute(lane), acc1)
				acc2 = q8Pairs(unsafe.Add(p2, o), xl).Add(q8Pairs(unsafe.Add(p2, o+16), xh)).ConvertToFloat32().MulAdd(sc2.Permute(lane), acc2)
				acc3 = q8Pairs(unsafe.Add(p3, o), xl).Add(q8Pairs(unsafe.Add(p3, o+16), xh)).ConvertToFloat32().MulAdd(sc3.Permute(lane), acc3)
			}
		}
		store4x8(y, r, post, acc0, acc1, acc2, acc3)
	}
	archsimd.ClearAVXUpperBits()
}

// lanes8GroupsGo is the whole groups' part of lanes8Layout as single moves of pairs of values
// (uint32): q and lay hold 16·full pairs (full a multiple of 8 blocks).
func lanes8GroupsGo(q4 bool, q, lay []uint32) {
	for g := 0; g+128 <= len(q); g += 128 {
		qg, lg := (*[128]uint32)(q[g:g+128]), (*[128]uint32)(lay[g:g+128]) // constant indices below: no bounds checks
		if q4 {
			for i := range 8 {
				for s := range 8 {
					lg[16*s+i], lg[16*s+8+i] = qg[16*i+s], qg[16*i+8+s]
				}
			}
			continue
		}
		for i := range 8 {
			for s := range 16 {
				lg[8*s+i] = qg[16*i+s]
			}
		}
	}
}
