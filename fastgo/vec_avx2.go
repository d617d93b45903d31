//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// The element-wise vector loops on AVX2 with FMA (256-bit vectors of 8 float32), for the CPUs
// without AVX-512 (most laptops, AMD EPYC before Zen 4). vec_simd.go's loops call them when
// vecAVX512 is false and vecAVX2 true; each keeps the contract of the AVX-512 loop it stands in
// for, and gives the same bits: exp builds 2ⁿ without VSCALEFPS (AVX-512) but rounds as it does,
// the sums add in the same 64 lanes, the maxima, the arithmetic and the copies are exact. Only
// methods whose CPU feature is AVX, AVX2 or FMA are used (an AVX-512 one dies of SIGILL here).

import (
	"math"
	"simd/archsimd"
)

// pow2F32x8 is 2ᵏ for integer-valued float32 lanes −126 ≤ k ≤ 127: k + 127 + 1.5·2²³ holds
// k + 127 in its low mantissa bits (exactly: below 2²⁴), and shifting the bits left by 23 puts
// that into the exponent field and drops the rest.
func pow2F32x8(k archsimd.Float32x8) archsimd.Float32x8 {
	return k.Add(archsimd.BroadcastFloat32x8(127 + 0x1.8p23)).AsUint32x8().ShiftAllLeft(23).AsFloat32x8()
}

// expF32AVX2 is expF32Vec on AVX2 (dst[i] = exp(src[i]) for i < min(len(dst), len(src))), the
// same computation bit for bit: the clamp to [−104, 88.8], n = round(x / ln 2) (VROUNDPS, to
// even), the reduction and the Taylor polynomial of degree 7 by the same fused multiply-adds.
// VSCALEFPS, which applies 2ⁿ rounding once, is AVX-512; here n = n₁ + n₂ with n₁ = ⌊n/2⌋, both
// in [−75, 64] (n is in [−150, 128]), so 2^n₁ and 2^n₂ are normal float32s made by integer
// operations (pow2F32x8), p·2^n₁ is exact (p ∈ [0.7, 1.42]) and ·2^n₂ rounds once: into the
// subnormals, to 0 below them, to +Inf above the largest float32, as VSCALEFPS. NaN passes
// through. Error: about 1 ulp (the tests bound it by 2). A vector without subnormal results
// avoids the underflow as expF32Vec does (clamp to −87, lanes below set to +0).
func expF32AVX2(dst, src []float32) {
	lo, hi := archsimd.BroadcastFloat32x8(-104), archsimd.BroadcastFloat32x8(88.8)
	normal := archsimd.BroadcastFloat32x8(expNormalFloor)
	log2e := archsimd.BroadcastFloat32x8(math.Log2E)
	negLn2Hi := archsimd.BroadcastFloat32x8(-0.693359375)
	negLn2Lo := archsimd.BroadcastFloat32x8(2.12194440e-4)
	one := archsimd.BroadcastFloat32x8(1)
	scaled := func(c archsimd.Float32x8) archsimd.Float32x8 { // exp(c), c clamped
		n := c.Mul(log2e).RoundToEven()
		r := n.MulAdd(negLn2Hi, c)
		r = n.MulAdd(negLn2Lo, r)
		p := expCoef8(7).MulAdd(r, expCoef8(6)) // the coefficients from memory (vec_simd.go)
		p = p.MulAdd(r, expCoef8(5))
		p = p.MulAdd(r, expCoef8(4))
		p = p.MulAdd(r, expCoef8(3))
		p = p.MulAdd(r, expCoef8(2))
		p = p.MulAdd(r, one)
		p = p.MulAdd(r, one)
		n1 := n.Mul(expCoef8(2)).Floor() // n/2 rounded down
		return p.Mul(pow2F32x8(n1)).Mul(pow2F32x8(n.Sub(n1)))
	}
	exp := func(x archsimd.Float32x8) archsimd.Float32x8 {
		under := x.Less(normal)
		switch {
		case under.ToBits() == 0: // every result normal or +Inf (x ≥ −87 or NaN)
			return x.Merge(scaled(x.Min(hi)), x.IsNaN())
		case x.GreaterEqual(lo).And(under).ToBits() == 0: // lanes below −87 are below −104: +0
			return x.Merge(scaled(x.Max(normal).Min(hi)).Masked(x.GreaterEqual(normal)), x.IsNaN())
		}
		return x.Merge(scaled(x.Max(lo).Min(hi)), x.IsNaN()) // subnormal results
	}
	n := min(len(dst), len(src))
	i := 0
	for ; i+8 <= n; i += 8 {
		exp(archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
	}
	if i < n {
		storePartF32x8(exp(loadPartF32x8(src[i:n])), dst[i:n])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// subExpSumF32AVX2 is subExpSumF32Vec on AVX2, the same bits: expF32AVX2's exp of each
// difference (written out again, as subExpSumF32Vec's is), summed by sumF32AVX2 (the AVX-512
// loop's 16 lanes as two halves).
func subExpSumF32AVX2(dst, src []float32, m float32, sum bool) float32 {
	lo, hi := archsimd.BroadcastFloat32x8(-104), archsimd.BroadcastFloat32x8(88.8)
	normal := archsimd.BroadcastFloat32x8(expNormalFloor)
	log2e := archsimd.BroadcastFloat32x8(math.Log2E)
	negLn2Hi := archsimd.BroadcastFloat32x8(-0.693359375)
	negLn2Lo := archsimd.BroadcastFloat32x8(2.12194440e-4)
	one := archsimd.BroadcastFloat32x8(1)
	scaled := func(c archsimd.Float32x8) archsimd.Float32x8 { // exp(c), c clamped
		n := c.Mul(log2e).RoundToEven()
		r := n.MulAdd(negLn2Hi, c)
		r = n.MulAdd(negLn2Lo, r)
		p := expCoef8(7).MulAdd(r, expCoef8(6)) // the coefficients from memory (vec_simd.go)
		p = p.MulAdd(r, expCoef8(5))
		p = p.MulAdd(r, expCoef8(4))
		p = p.MulAdd(r, expCoef8(3))
		p = p.MulAdd(r, expCoef8(2))
		p = p.MulAdd(r, one)
		p = p.MulAdd(r, one)
		n1 := n.Mul(expCoef8(2)).Floor() // n/2 rounded down
		return p.Mul(pow2F32x8(n1)).Mul(pow2F32x8(n.Sub(n1)))
	}
	ms := archsimd.BroadcastFloat32x8(m)
	exp := func(x archsimd.Float32x8) archsimd.Float32x8 { // exp(x − m)
		x = x.Sub(ms)
		under := x.Less(normal)
		switch {
		case under.ToBits() == 0: // every result normal or +Inf (x ≥ −87 or NaN)
			return x.Merge(scaled(x.Min(hi)), x.IsNaN())
		case x.GreaterEqual(lo).And(under).ToBits() == 0: // lanes below −87 are below −104: +0
			return x.Merge(scaled(x.Max(normal).Min(hi)).Masked(x.GreaterEqual(normal)), x.IsNaN())
		}
		return x.Merge(scaled(x.Max(lo).Min(hi)), x.IsNaN()) // subnormal results
	}
	n := min(len(dst), len(src))
	i := 0
	for ; i+8 <= n; i += 8 {
		exp(archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
	}
	if i < n {
		storePartF32x8(exp(loadPartF32x8(src[i:n])), dst[i:n])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
	if !sum {
		return 0
	}
	return sumF32AVX2(dst[:n]) // from the row just written, as subExpSumF32Vec does
}

// maxF32AVX2 is maxF32Vec on AVX2: max(init, src...) as Go's max would (any NaN gives NaN; +0
// above −0). As there, the vector maximum is exact, an integer maximum of the magnitudes' bit
// patterns finds a NaN (the only pattern above +Inf's), and rows that contain a NaN or whose
// maximum is a zero are redone in plain Go. 32 elements a step in four accumulators: with the
// two of magnitudes, six of AVX2's sixteen registers.
func maxF32AVX2(init float32, src []float32) float32 {
	if init != init {
		return init
	}
	acc0 := archsimd.BroadcastFloat32x8(init)
	acc1, acc2, acc3 := acc0, acc0, acc0
	abs := archsimd.BroadcastInt32x8(math.MaxInt32)
	var mag0, mag1 archsimd.Int32x8
	n := len(src)
	i := 0
	for ; i+32 <= n; i += 32 {
		x0 := archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))
		x1 := archsimd.LoadFloat32x8((*[8]float32)(src[i+8 : i+16]))
		x2 := archsimd.LoadFloat32x8((*[8]float32)(src[i+16 : i+24]))
		x3 := archsimd.LoadFloat32x8((*[8]float32)(src[i+24 : i+32]))
		acc0, acc1, acc2, acc3 = acc0.Max(x0), acc1.Max(x1), acc2.Max(x2), acc3.Max(x3)
		mag0 = mag0.Max(x0.AsInt32x8().And(abs)).Max(x1.AsInt32x8().And(abs))
		mag1 = mag1.Max(x2.AsInt32x8().And(abs)).Max(x3.AsInt32x8().And(abs))
	}
	for ; i+8 <= n; i += 8 {
		x0 := archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8]))
		acc0 = acc0.Max(x0)
		mag0 = mag0.Max(x0.AsInt32x8().And(abs))
	}
	acc := acc0.Max(acc1).Max(acc2.Max(acc3))
	h4 := acc.GetLo().Max(acc.GetHi())
	mag := mag0.Max(mag1)
	g4 := mag.GetLo().Max(mag.GetHi())
	var h [4]float32
	var g [4]int32
	h4.Store(&h)
	g4.Store(&g)
	archsimd.ClearAVXUpperBits() // after the stores, before the scalar code (doc.go, "Clean upper halves")
	m, worst := h[0], g[0]
	for e := 1; e < 4; e++ {
		// no NaN among these unless worst says so; ±0 are sorted out below
		if v := h[e]; v > m {
			m = v
		}
		worst = max(worst, g[e])
	}
	for _, v := range src[i:] {
		if v > m {
			m = v
		}
		worst = max(worst, int32(math.Float32bits(v)&math.MaxInt32))
	}
	if worst > 0x7f800000 {
		return maxF32Go(init, src) // a NaN: Go's max returns it
	}
	if m == 0 {
		return zeroMax(init, src)
	}
	return m
}

// sumF32AVX2 is sumF32Vec on AVX2, in its order bit for bit: the 64 lanes of its four
// 16-lane accumulators as eight of 8 (lo, hi: lanes 0–7, 8–15), added the same way, then the
// tail in order. Eight accumulators stay in registers (ten spill, kernel_simd.go).
func sumF32AVX2(src []float32) float32 {
	var a0, a1, a2, a3, b0, b1, b2, b3 archsimd.Float32x8 // a: lanes 0–7 of sumF32Vec's accumulators, b: 8–15
	ld := func(i int) archsimd.Float32x8 { return archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8])) }
	i := 0
	for ; i+64 <= len(src); i += 64 {
		a0, b0 = a0.Add(ld(i)), b0.Add(ld(i+8))
		a1, b1 = a1.Add(ld(i+16)), b1.Add(ld(i+24))
		a2, b2 = a2.Add(ld(i+32)), b2.Add(ld(i+40))
		a3, b3 = a3.Add(ld(i+48)), b3.Add(ld(i+56))
	}
	for ; i+16 <= len(src); i += 16 {
		a0, b0 = a0.Add(ld(i)), b0.Add(ld(i+8))
	}
	// lane j + lane j+8 (a + b), then j + j+4, then (0 + 2) + (1 + 3), as sumF32Vec
	h8 := a0.Add(a1).Add(a2.Add(a3)).Add(b0.Add(b1).Add(b2.Add(b3)))
	var h [4]float32
	h8.GetLo().Add(h8.GetHi()).Store(&h)
	archsimd.ClearAVXUpperBits() // after the store, before the scalar code (doc.go, "Clean upper halves")
	s := (h[0] + h[2]) + (h[1] + h[3])
	for _, v := range src[i:] {
		s += v
	}
	return s
}

// binaryF32AVX2 is binaryF32Vec on AVX2 for o one of Add, Sub, Mul, Div (others give Div):
// dst[i] = a[i] ⊙ b[i] (bVec) or a[i] ⊙ b[0], swapped when swap; each lane rounded correctly,
// the plain-Go loop's bits.
func binaryF32AVX2(o op, dst, a, b []float32, bVec, swap bool) {
	n := len(dst)
	a = a[:n]
	var bs archsimd.Float32x8
	if bVec {
		b = b[:n]
	} else {
		bs = archsimd.BroadcastFloat32x8(b[0])
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(a[i : i+8]))
		y := bs
		if bVec {
			y = archsimd.LoadFloat32x8((*[8]float32)(b[i : i+8]))
		}
		if swap {
			x, y = y, x
		}
		binaryF32x8(o, x, y).Store((*[8]float32)(dst[i : i+8]))
	}
	if i < n {
		x := loadPartF32x8(a[i:n])
		y := bs
		if bVec {
			y = loadPartF32x8(b[i:n])
		}
		if swap {
			x, y = y, x
		}
		storePartF32x8(binaryF32x8(o, x, y), dst[i:n])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// binaryF32x8 is x ⊙ y for ⊙ one of Add, Sub, Mul, Div (o; others give Div), as binaryF32x16.
func binaryF32x8(o op, x, y archsimd.Float32x8) archsimd.Float32x8 {
	switch o {
	case opAdd:
		return x.Add(y)
	case opSub:
		return x.Sub(y)
	case opMul:
		return x.Mul(y)
	}
	return x.Div(y)
}

// copyRunsF32AVX2 is copyRunsF32 on AVX2: dst[k·width : (k+1)·width] = src[offs[k]:][:width]
// for each k, width a multiple of 16 (the caller's check).
func copyRunsF32AVX2(dst, src []float32, offs []int, width int) {
	for k, off := range offs {
		d, s := dst[k*width:][:width], src[off:][:width]
		for j := 0; j < width; j += 16 {
			x0 := archsimd.LoadFloat32x8((*[8]float32)(s[j : j+8]))
			x1 := archsimd.LoadFloat32x8((*[8]float32)(s[j+8 : j+16]))
			x0.Store((*[8]float32)(d[j : j+8]))
			x1.Store((*[8]float32)(d[j+8 : j+16]))
		}
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
}

// transposeBlocksF32AVX2 is transposeBlocksF32 on AVX2, with the same contract: rows [y0, y1)
// in 16×16 blocks, each as four 8×8 register transposes (transpose8x8F32), dst[x·ds + y] =
// src[y·ss + x] for x < the returned multiple of 16 (0 with fewer than 16 rows or columns), the
// rows below the last full block element by element.
func transposeBlocksF32AVX2(src []float32, ss int, dst []float32, ds int, y0, y1, nx int) int {
	if y1-y0 < 16 || nx < 16 {
		return 0
	}
	end := nx / 16 * 16
	for y := y0; y+16 <= y1; y += 16 {
		for x := 0; x < end; x += 16 {
			transpose8x8F32(src[y*ss+x:], ss, dst[x*ds+y:], ds)
			transpose8x8F32(src[y*ss+x+8:], ss, dst[(x+8)*ds+y:], ds)
			transpose8x8F32(src[(y+8)*ss+x:], ss, dst[x*ds+y+8:], ds)
			transpose8x8F32(src[(y+8)*ss+x+8:], ss, dst[(x+8)*ds+y+8:], ds)
		}
	}
	for y := y0 + (y1-y0)/16*16; y < y1; y++ {
		for x := 0; x < end; x++ {
			dst[x*ds+y] = src[y*ss+x]
		}
	}
	return end
}

// transpose8x8F32: dst[j·ds + i] = src[i·ss + j] for i, j < 8, in three stages of shuffles:
// rows interleaved by 32-bit elements (VPUNPCKLDQ/HDQ: pairs of rows), by 64-bit pairs
// (VPUNPCKLQDQ/HQDQ: columns j and j+4 of four rows, one per 128-bit half), then the halves of
// rows 0–3 and 4–7 joined (VPERM2F128).
func transpose8x8F32(src []float32, ss int, dst []float32, ds int) {
	ld := func(i int) archsimd.Int32x8 {
		return archsimd.LoadFloat32x8((*[8]float32)(src[i*ss : i*ss+8])).AsInt32x8()
	}
	r0, r1, r2, r3, r4, r5, r6, r7 := ld(0), ld(1), ld(2), ld(3), ld(4), ld(5), ld(6), ld(7)
	// t0 = [r0₀ r1₀ r0₁ r1₁ | r0₄ r1₄ r0₅ r1₅], t1 = [r0₂ r1₂ r0₃ r1₃ | r0₆ r1₆ r0₇ r1₇], …
	t0, t1 := r0.InterleaveLoGrouped(r1).AsUint64x4(), r0.InterleaveHiGrouped(r1).AsUint64x4()
	t2, t3 := r2.InterleaveLoGrouped(r3).AsUint64x4(), r2.InterleaveHiGrouped(r3).AsUint64x4()
	t4, t5 := r4.InterleaveLoGrouped(r5).AsUint64x4(), r4.InterleaveHiGrouped(r5).AsUint64x4()
	t6, t7 := r6.InterleaveLoGrouped(r7).AsUint64x4(), r6.InterleaveHiGrouped(r7).AsUint64x4()
	// u0 = [r0₀ r1₀ r2₀ r3₀ | r0₄ r1₄ r2₄ r3₄] (columns 0 | 4 of rows 0–3), u1: 1 | 5, u2: 2 | 6, …
	u0, u1 := t0.InterleaveLoGrouped(t2).AsFloat32x8(), t0.InterleaveHiGrouped(t2).AsFloat32x8()
	u2, u3 := t1.InterleaveLoGrouped(t3).AsFloat32x8(), t1.InterleaveHiGrouped(t3).AsFloat32x8()
	u4, u5 := t4.InterleaveLoGrouped(t6).AsFloat32x8(), t4.InterleaveHiGrouped(t6).AsFloat32x8()
	u6, u7 := t5.InterleaveLoGrouped(t7).AsFloat32x8(), t5.InterleaveHiGrouped(t7).AsFloat32x8()
	st := func(j int, v archsimd.Float32x8) { v.Store((*[8]float32)(dst[j*ds : j*ds+8])) }
	st(0, u0.Select128FromPair(0, 2, u4))
	st(1, u1.Select128FromPair(0, 2, u5))
	st(2, u2.Select128FromPair(0, 2, u6))
	st(3, u3.Select128FromPair(0, 2, u7))
	st(4, u0.Select128FromPair(1, 3, u4))
	st(5, u1.Select128FromPair(1, 3, u5))
	st(6, u2.Select128FromPair(1, 3, u6))
	st(7, u3.Select128FromPair(1, 3, u7))
}
