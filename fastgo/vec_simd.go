//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

// Vector loops of the element-wise executors (AVX-512, simd/archsimd; same build constraints as
// kernel_simd.go). Without AVX-512 they run their AVX2 versions (vec_avx2.go: the same contracts,
// the same bits) where the CPU has AVX2 and FMA; without either they report false and the
// callers use plain Go.

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

var vecAVX512 = archsimd.X86.AVX512()

// vecAVX2 is whether the CPU runs 256-bit loops (AVX2 with FMA): the loops that run where
// AVX-512 is absent (most laptops). A test clears vecAVX512 to run them on an AVX-512 CPU.
var vecAVX2 = archsimd.X86.AVX2() && archsimd.X86.FMA()

// vecName names the vector loops in use (for Status).
func vecName() string {
	switch {
	case vecAVX512:
		return "avx512"
	case vecAVX2:
		return "avx2"
	}
	return "go"
}

// expF32Vec sets dst[i] = exp(src[i]) and reports true, or reports false (and does nothing)
// without AVX-512 or AVX2 (expF32AVX2: the same values without VSCALEFPS).
//
// exp(x) = 2ⁿ · exp(r) with n = round(x / ln 2) and r = x − n·ln 2 (|r| ≤ ln2/2, ln 2 in two
// parts, fused multiply-adds), exp(r) by its Taylor polynomial of degree 7 (truncation below
// 0.1 ulp) in Horner form, and 2ⁿ applied by VSCALEFPS, which rounds once into the subnormal
// range and overflows to +Inf. x is clamped to [−104, 88.8] first (beyond, exp is 0 or +Inf in
// float32) and NaN passes through. Error: about 1 ulp (the tests bound it by 2).
//
// Underflow: a result below the normal range costs an Intel core a microcode assist per
// instruction (with Go's MXCSR: no flush to zero), ~25× the time of the vector. Masked
// attention feeds exp whole rows of −Inf, so a vector whose lanes all give 0 or a normal
// number (every x < −87 is below −104 or −Inf) is computed on x clamped to −87 instead, and
// its lanes below −87 set to +0: what the clamp to −104 gives them, without the underflow.
// Only a vector with an x in [−104, −87), whose exp is subnormal, takes the assist
// (BenchmarkExpUnderflow).
func expF32Vec(dst, src []float32) bool {
	if !vecAVX512 {
		if vecAVX2 {
			expF32AVX2(dst, src)
		}
		return vecAVX2
	}
	lo, hi := archsimd.BroadcastFloat32x16(-104), archsimd.BroadcastFloat32x16(88.8)
	normal := archsimd.BroadcastFloat32x16(expNormalFloor)
	log2e := archsimd.BroadcastFloat32x16(math.Log2E)
	negLn2Hi := archsimd.BroadcastFloat32x16(-0.693359375)
	negLn2Lo := archsimd.BroadcastFloat32x16(2.12194440e-4)
	one := archsimd.BroadcastFloat32x16(1)
	scaled := func(c archsimd.Float32x16) archsimd.Float32x16 { // exp(c), c clamped
		n := c.Mul(log2e).RoundToEvenScaled(0)
		r := n.MulAdd(negLn2Hi, c)
		r = n.MulAdd(negLn2Lo, r)
		p := expCoef(7).MulAdd(r, expCoef(6)) // the coefficients from memory: expTaylor
		p = p.MulAdd(r, expCoef(5))
		p = p.MulAdd(r, expCoef(4))
		p = p.MulAdd(r, expCoef(3))
		p = p.MulAdd(r, expCoef(2))
		p = p.MulAdd(r, one)
		p = p.MulAdd(r, one)
		return p.Scale(n)
	}
	exp := func(x archsimd.Float32x16) archsimd.Float32x16 {
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
	for ; i+16 <= n; i += 16 {
		exp(archsimd.LoadFloat32x16((*[16]float32)(src[i : i+16]))).Store((*[16]float32)(dst[i : i+16]))
	}
	if i < n {
		storePartF32x16(exp(loadPartF32x16(src[i:n])), dst[i:n])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
	return true
}

// subExpSumF32Vec sets dst[i] = exp(src[i] − m) for i < min(len(dst), len(src)) and returns
// their sum (0 without sum) and true, or false (nothing written) without AVX-512 or AVX2
// (subExpSumF32AVX2): softmax's numerator and denominator of a row, with the values of three
// passes bit for bit — binaryF32Vec's subtraction, expF32Vec's exp (the same lanes through the
// same steps) and sumF32Vec's sum, which it calls — without writing the differences and reading
// them back (a perf profile of fastgo's BenchmarkMHA/long_causal had put 5% of its samples in the
// subtraction, the first to read the scores from memory, 7% in exp). The sum reads the row just
// written, from L1: adding each vector as it was made kept four more accumulators through the
// loop, and the compiler spilled (see "exp's coefficients in memory" below; BenchmarkSubExpSum,
// 2-core Zen 4: 1.3 ns a value with the accumulators, 0.30 now, 0.38 for the three passes). Its
// exp is expF32Vec's written out again: one loop for both, with the subtraction behind a flag,
// ran exp 6% slower, and exp alone must not subtract even +0, which would quiet a signaling NaN
// that expF32Vec passes on as it is.
func subExpSumF32Vec(dst, src []float32, m float32, sum bool) (float32, bool) {
	if !vecAVX512 {
		if vecAVX2 {
			return subExpSumF32AVX2(dst, src, m, sum), true
		}
		return 0, false
	}
	lo, hi := archsimd.BroadcastFloat32x16(-104), archsimd.BroadcastFloat32x16(88.8)
	normal := archsimd.BroadcastFloat32x16(expNormalFloor)
	log2e := archsimd.BroadcastFloat32x16(math.Log2E)
	negLn2Hi := archsimd.BroadcastFloat32x16(-0.693359375)
	negLn2Lo := archsimd.BroadcastFloat32x16(2.12194440e-4)
	one := archsimd.BroadcastFloat32x16(1)
	scaled := func(c archsimd.Float32x16) archsimd.Float32x16 { // exp(c), c clamped
		n := c.Mul(log2e).RoundToEvenScaled(0)
		r := n.MulAdd(negLn2Hi, c)
		r = n.MulAdd(negLn2Lo, r)
		p := expCoef(7).MulAdd(r, expCoef(6)) // the coefficients from memory: expTaylor
		p = p.MulAdd(r, expCoef(5))
		p = p.MulAdd(r, expCoef(4))
		p = p.MulAdd(r, expCoef(3))
		p = p.MulAdd(r, expCoef(2))
		p = p.MulAdd(r, one)
		p = p.MulAdd(r, one)
		return p.Scale(n)
	}
	exp := func(x archsimd.Float32x16) archsimd.Float32x16 {
		under := x.Less(normal)
		switch {
		case under.ToBits() == 0: // every result normal or +Inf (x ≥ −87 or NaN)
			return x.Merge(scaled(x.Min(hi)), x.IsNaN())
		case x.GreaterEqual(lo).And(under).ToBits() == 0: // lanes below −87 are below −104: +0
			return x.Merge(scaled(x.Max(normal).Min(hi)).Masked(x.GreaterEqual(normal)), x.IsNaN())
		}
		return x.Merge(scaled(x.Max(lo).Min(hi)), x.IsNaN()) // subnormal results
	}
	ms := archsimd.BroadcastFloat32x16(m)
	n := min(len(dst), len(src))
	i := 0
	for ; i+16 <= n; i += 16 {
		exp(archsimd.LoadFloat32x16((*[16]float32)(src[i : i+16])).Sub(ms)).Store((*[16]float32)(dst[i : i+16]))
	}
	if i < n {
		storePartF32x16(exp(loadPartF32x16(src[i:n]).Sub(ms)), dst[i:n])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
	if !sum {
		return 0, true
	}
	// The sum from the row just written (in L1): four more accumulators live through the loop
	// above made the compiler spill (see "exp's coefficients in memory" below).
	s, _ := sumF32Vec(dst[:n])
	return s, true
}

// expNormalFloor is the least x whose exp the vector loops compute without underflow: exp(−87)
// ≈ 1.6·10⁻³⁸ is above the least normal float32 (2⁻¹²⁶ ≈ 1.18·10⁻³⁸; n = round(−87/ln 2) = −126
// and p ≥ 1.4 there), and so is every partial result on the way.
const expNormalFloor = -87

// maxF32Vec returns max(init, src...) as Go's max would (any NaN gives NaN; +0 above −0) and
// true, or false without AVX-512 or AVX2 (maxF32AVX2). The vector maximum is exact; rows that
// contain a NaN or whose maximum is a zero are redone in plain Go, where the sign of zero and NaN
// follow Go's rules.
func maxF32Vec(init float32, src []float32) (float32, bool) {
	if !vecAVX512 {
		if vecAVX2 {
			return maxF32AVX2(init, src), true
		}
		return 0, false
	}
	if init != init {
		return init, true
	}
	// Four vector maxima, and in mag the largest |x| bit pattern (sign cleared): a NaN is the
	// only float32 whose pattern is above +Inf's (0x7f800000), so one integer maximum per vector
	// finds it instead of a compare into a mask register and back. The lanes are reduced by
	// halves in vector registers; a row of 512 (causal flash's score tiles) spent more time in
	// the old per-lane loop of Go's max (NaN and signed-zero rules, once per lane) than in the
	// vector loop (0.37 against 0.11 ns per element, BenchmarkReduceRows).
	acc0 := archsimd.BroadcastFloat32x16(init)
	acc1, acc2, acc3 := acc0, acc0, acc0
	abs := archsimd.BroadcastInt32x16(math.MaxInt32)
	var mag0, mag1 archsimd.Int32x16
	n := len(src)
	i := 0
	for ; i+64 <= n; i += 64 {
		x0 := archsimd.LoadFloat32x16((*[16]float32)(src[i : i+16]))
		x1 := archsimd.LoadFloat32x16((*[16]float32)(src[i+16 : i+32]))
		x2 := archsimd.LoadFloat32x16((*[16]float32)(src[i+32 : i+48]))
		x3 := archsimd.LoadFloat32x16((*[16]float32)(src[i+48 : i+64]))
		acc0, acc1, acc2, acc3 = acc0.Max(x0), acc1.Max(x1), acc2.Max(x2), acc3.Max(x3)
		mag0 = mag0.Max(x0.AsInt32x16().And(abs)).Max(x1.AsInt32x16().And(abs))
		mag1 = mag1.Max(x2.AsInt32x16().And(abs)).Max(x3.AsInt32x16().And(abs))
	}
	for ; i+16 <= n; i += 16 {
		x0 := archsimd.LoadFloat32x16((*[16]float32)(src[i : i+16]))
		acc0 = acc0.Max(x0)
		mag0 = mag0.Max(x0.AsInt32x16().And(abs))
	}
	acc := acc0.Max(acc1).Max(acc2.Max(acc3))
	h8 := acc.GetLo().Max(acc.GetHi())
	h4 := h8.GetLo().Max(h8.GetHi())
	mag := mag0.Max(mag1)
	g8 := mag.GetLo().Max(mag.GetHi())
	g4 := g8.GetLo().Max(g8.GetHi())
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
		return maxF32Go(init, src), true // a NaN: Go's max returns it
	}
	if m == 0 {
		return zeroMax(init, src), true
	}
	return m, true
}

// sumF32Vec returns the sum of src and true, or false without AVX-512 or AVX2 (sumF32AVX2, in
// the same order). It adds in 64 lanes
// (four vectors of 16, then the lanes pairwise, then the tail in order): another order than
// GoMLX's one-by-one sum, within (len(src)+1)·u·Σ|src| of the exact sum like any order (u =
// 2⁻²⁴), and a sequential sum's latency chain (one add per element, ~4 cycles each) becomes
// four independent vector chains.
func sumF32Vec(src []float32) (float32, bool) {
	if !vecAVX512 {
		if vecAVX2 {
			return sumF32AVX2(src), true
		}
		return 0, false
	}
	var a0, a1, a2, a3 archsimd.Float32x16
	i := 0
	for ; i+64 <= len(src); i += 64 {
		a0 = a0.Add(archsimd.LoadFloat32x16((*[16]float32)(src[i : i+16])))
		a1 = a1.Add(archsimd.LoadFloat32x16((*[16]float32)(src[i+16 : i+32])))
		a2 = a2.Add(archsimd.LoadFloat32x16((*[16]float32)(src[i+32 : i+48])))
		a3 = a3.Add(archsimd.LoadFloat32x16((*[16]float32)(src[i+48 : i+64])))
	}
	for ; i+16 <= len(src); i += 16 {
		a0 = a0.Add(archsimd.LoadFloat32x16((*[16]float32)(src[i : i+16])))
	}
	// the lanes pairwise by halves, in vector registers: lane j + lane j+8, then j + j+4, …
	acc := a0.Add(a1).Add(a2.Add(a3))
	h8 := acc.GetLo().Add(acc.GetHi())
	var h [4]float32
	h8.GetLo().Add(h8.GetHi()).Store(&h)
	archsimd.ClearAVXUpperBits() // after the store, before the scalar code (doc.go, "Clean upper halves")
	s := (h[0] + h[2]) + (h[1] + h[3])
	for _, v := range src[i:] {
		s += v
	}
	return s, true
}

// binaryF32Vec sets dst[i] = a[i] ⊙ b[i] (bVec) or a[i] ⊙ b[0] (!bVec) for ⊙ one of Add, Sub,
// Mul, Div, swapped (b ⊙ a) when swap, and reports true; false (nothing written) for other ops or
// without AVX-512 or AVX2 (binaryF32AVX2). Vector add, subtract, multiply and divide round each
// lane correctly, so the results equal the plain-Go loops' bit for bit.
func binaryF32Vec(o op, dst, a, b []float32, bVec, swap bool) bool {
	switch o {
	case opAdd, opSub, opMul, opDiv:
	default:
		return false
	}
	if !vecAVX512 {
		if vecAVX2 {
			binaryF32AVX2(o, dst, a, b, bVec, swap)
		}
		return vecAVX2
	}
	n := len(dst)
	a = a[:n]
	var bs archsimd.Float32x16
	if bVec {
		b = b[:n]
	} else {
		bs = archsimd.BroadcastFloat32x16(b[0])
	}
	// The operation is picked by a switch in the loop (one predictable branch per vector): as
	// a func value (archsimd.Float32x16.Sub), every vector was an indirect call to a wrapper,
	// and subtracting a row's maximum from causal flash's score tiles ran slower than their exp.
	i := 0
	for ; i+16 <= n; i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(a[i : i+16]))
		y := bs
		if bVec {
			y = archsimd.LoadFloat32x16((*[16]float32)(b[i : i+16]))
		}
		if swap {
			x, y = y, x
		}
		binaryF32x16(o, x, y).Store((*[16]float32)(dst[i : i+16]))
	}
	if i < n {
		x := loadPartF32x16(a[i:n])
		y := bs
		if bVec {
			y = loadPartF32x16(b[i:n])
		}
		if swap {
			x, y = y, x
		}
		storePartF32x16(binaryF32x16(o, x, y), dst[i:n])
	}
	archsimd.ClearAVXUpperBits() // vzeroupper before Go's scalar code (doc.go, "Clean upper halves")
	return true
}

// binaryF32x16 is x ⊙ y for ⊙ one of Add, Sub, Mul, Div (o; others give Div). Small enough to be
// inlined into the loops.
func binaryF32x16(o op, x, y archsimd.Float32x16) archsimd.Float32x16 {
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

// copyRunsF32 sets dst[k·width : (k+1)·width] = src[offs[k] : offs[k]+width] for each k and
// reports true, or false (nothing written) without AVX-512 or AVX2 (copyRunsF32AVX2) or when
// width is not a multiple of 16.
func copyRunsF32(dst, src []float32, offs []int, width int) bool {
	if width%16 != 0 {
		return false
	}
	if !vecAVX512 {
		if vecAVX2 {
			copyRunsF32AVX2(dst, src, offs, width)
		}
		return vecAVX2
	}
	for k, off := range offs {
		d, s := dst[k*width:][:width], src[off:][:width]
		for j := 0; j < width; j += 16 {
			archsimd.LoadFloat32x16((*[16]float32)(s[j : j+16])).Store((*[16]float32)(d[j : j+16]))
		}
	}
	return true
}

// transposeIdx[s][0|1]: the ConcatPermute indices of one stage of the 16×16 transpose, for
// block size 8, 4, 2, 1: row a' takes a's columns j with bit s clear and b's columns j−s for
// the others; row b' takes a's columns j+s and b's columns j with bit s set.
var transposeIdx = func() (idx [4][2]archsimd.Uint32x16) {
	if !vecAVX512 {
		return idx
	}
	for st, s := range []uint32{8, 4, 2, 1} {
		var a, b [16]uint32
		for j := uint32(0); j < 16; j++ {
			if j&s == 0 {
				a[j], b[j] = j, j+s
			} else {
				a[j], b[j] = 16+j-s, 16+j
			}
		}
		idx[st][0], idx[st][1] = archsimd.LoadUint32x16(&a), archsimd.LoadUint32x16(&b)
	}
	return idx
}()

// transposeBlocksF32 transposes rows [y0, y1) of a float32 matrix in 16×16 blocks held in
// AVX-512 registers (four stages that swap the off-diagonal blocks of size 8, 4, 2 and 1):
// dst[x·ds + y] = src[y·ss + x] for the columns x < the returned value (a multiple of 16, up
// to nx), which is 0 without AVX-512 or AVX2 (transposeBlocksF32AVX2: four 8×8 transposes a
// block) or with fewer than 16 rows. The caller does the rest.
func transposeBlocksF32(src []float32, ss int, dst []float32, ds int, y0, y1, nx int) int {
	if !vecAVX512 {
		if vecAVX2 {
			return transposeBlocksF32AVX2(src, ss, dst, ds, y0, y1, nx)
		}
		return 0
	}
	if y1-y0 < 16 || nx < 16 {
		return 0
	}
	end := nx / 16 * 16
	for y := y0; y+16 <= y1; y += 16 {
		for x := 0; x < end; x += 16 {
			transpose16x16F32(src[y*ss+x:], ss, dst[x*ds+y:], ds)
		}
	}
	if (y1-y0)%16 != 0 {
		// Rows left below the last full block: the caller's tiles cover only whole row ranges,
		// so finish these columns here, element by element.
		for y := y0 + (y1-y0)/16*16; y < y1; y++ {
			for x := 0; x < end; x++ {
				dst[x*ds+y] = src[y*ss+x]
			}
		}
	}
	return end
}

func transposePair(a, b archsimd.Float32x16, ia, ib archsimd.Uint32x16) (archsimd.Float32x16, archsimd.Float32x16) {
	return a.ConcatPermute(b, ia), a.ConcatPermute(b, ib)
}

// transpose16x16F32: dst[j·ds + i] = src[i·ss + j] for i, j < 16, in four stages that swap
// row bit b with column bit b for b = 3, 2, 1, 0 (transposeIdx). After the first stage
// (b = 3, rows i and i+8) the rows 0–7 and 8–15 never meet again, so the second group waits in
// an aligned buffer on the stack while the first finishes: at most 8 rows live at once. Held
// all together, 16 rows and the index vectors are more than the 15 vector registers Go's
// register allocator uses: it moved 77 vectors to and from the stack, and the transpose ran
// slower than AVX2's 8×8 blocks in L2 (BenchmarkTranspose [256 512]: 22.7 against 34.5 GB/s).
// Two halves of 8 rows × 16 columns each (the last three stages only) would need no buffer but
// write half rows: out of cache ([4096 1536]) 5.0 GB/s against 8.0 with whole rows.
func transpose16x16F32(src []float32, ss int, dst []float32, ds int) {
	var buf [8*16 + 15]float32
	pending := (*[8][16]float32)(unsafe.Pointer(&buf[(64-uintptr(unsafe.Pointer(&buf[0]))%64)%64/4]))
	ld := func(i int) archsimd.Float32x16 { return archsimd.LoadFloat32x16((*[16]float32)(src[i*ss : i*ss+16])) }
	ia, ib := transposeIdx[0][0], transposeIdx[0][1]
	r0, r8 := transposePair(ld(0), ld(8), ia, ib)
	r8.Store(&pending[0])
	r1, r8 := transposePair(ld(1), ld(9), ia, ib)
	r8.Store(&pending[1])
	r2, r8 := transposePair(ld(2), ld(10), ia, ib)
	r8.Store(&pending[2])
	r3, r8 := transposePair(ld(3), ld(11), ia, ib)
	r8.Store(&pending[3])
	r4, r8 := transposePair(ld(4), ld(12), ia, ib)
	r8.Store(&pending[4])
	r5, r8 := transposePair(ld(5), ld(13), ia, ib)
	r8.Store(&pending[5])
	r6, r8 := transposePair(ld(6), ld(14), ia, ib)
	r8.Store(&pending[6])
	r7, r8 := transposePair(ld(7), ld(15), ia, ib)
	r8.Store(&pending[7])
	transpose8Rows(r0, r1, r2, r3, r4, r5, r6, r7, dst, ds)
	p := func(i int) archsimd.Float32x16 { return archsimd.LoadFloat32x16(&pending[i]) }
	transpose8Rows(p(0), p(1), p(2), p(3), p(4), p(5), p(6), p(7), dst[8*ds:], ds)
}

// transpose8Rows finishes transpose16x16F32 for one group of 8 rows after its first stage: the
// stages for b = 2, 1, 0, then row p of the group is stored at dst[p·ds : p·ds+16].
func transpose8Rows(r0, r1, r2, r3, r4, r5, r6, r7 archsimd.Float32x16, dst []float32, ds int) {
	ia, ib := transposeIdx[1][0], transposeIdx[1][1]
	r0, r4 = transposePair(r0, r4, ia, ib)
	r1, r5 = transposePair(r1, r5, ia, ib)
	r2, r6 = transposePair(r2, r6, ia, ib)
	r3, r7 = transposePair(r3, r7, ia, ib)
	ia, ib = transposeIdx[2][0], transposeIdx[2][1]
	r0, r2 = transposePair(r0, r2, ia, ib)
	r1, r3 = transposePair(r1, r3, ia, ib)
	r4, r6 = transposePair(r4, r6, ia, ib)
	r5, r7 = transposePair(r5, r7, ia, ib)
	ia, ib = transposeIdx[3][0], transposeIdx[3][1]
	r0, r1 = transposePair(r0, r1, ia, ib)
	r2, r3 = transposePair(r2, r3, ia, ib)
	r4, r5 = transposePair(r4, r5, ia, ib)
	r6, r7 = transposePair(r6, r7, ia, ib)
	st := func(i int, v archsimd.Float32x16) { v.Store((*[16]float32)(dst[i*ds : i*ds+16])) }
	st(0, r0)
	st(1, r1)
	st(2, r2)
	st(3, r3)
	st(4, r4)
	st(5, r5)
	st(6, r6)
	st(7, r7)
}

// # exp's coefficients in memory
//
// Go's register allocator gives vector code 15 registers (X0–X14; X15 holds zero). exp's
// constants held in registers for a whole loop — the clamps, log₂e, ln 2 in two parts, 1 and the
// Taylor coefficients 1/7! … 1/2! — left too few for the values of one vector, and the compiler
// spilled one to the stack and read it back a few instructions later. The same loop then ran
// at 0.26 or 1.3 ns a value depending on the caller's frame (BenchmarkSubExpSum, 2-core AMD
// EPYC, Zen 4), as fits a 64-byte slot that crosses a cache line where the stack places it so,
// whose store the core cannot forward to the load that follows: the vector waits for the store
// to reach the cache. The coefficients are now read from memory at each use (expTaylor, a load
// from L1 that needs no register across the loop), and the loops keep every live value in
// registers (TestVectorLoopsDoNotSpill).

// expTaylor[i] is 1/i! in 16 lanes; exp uses i = 2 … 7 (expCoef).
var expTaylor = func() (t [8][16]float32) {
	f := 1.0
	for i := 1; i < len(t); i++ {
		f *= float64(i)
		for j := range t[i] {
			t[i][j] = float32(1 / f)
		}
	}
	return t
}()

// expCoef returns 1/i! in every lane, read from memory.
func expCoef(i int) archsimd.Float32x16 { return archsimd.LoadFloat32x16(&expTaylor[i]) }

// expCoef8 is expCoef for the AVX2 loops (vec_avx2.go): 1/i! in 8 lanes.
func expCoef8(i int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(expTaylor[i][:8]))
}
