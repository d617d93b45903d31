package fastgo

// The activation side of a packed matrix–vector product: x [cols] quantised once per product
// to 16-bit blocks of 32, so that the kernels multiply integers (Q4_1's unsigned nibbles or
// Q8_0's int8 by int16, exact in int32) and scale once per block. A block b of x becomes
//
//	q[32b+j] = roundToEven(x[32b+j]·qMax/a_b),  d[b] = a_b/qMax,  a_b = max_j |x[32b+j]|
//
// so |x − d·q| ≤ d/2 = a_b/65534 per element (plus float32 rounding; a block with a_b < 2⁻⁹⁶
// becomes zeros, tinyBlock): the product's error is
// Σ |w|·d/2 over the row. Not 8 bits, as llama.cpp's Q8 activations: SmolLM2's activations
// have outliers that take a block's whole 8-bit range, and with 8-bit x the greedy tokens of 12
// of the 14 parity prompts changed (cached-step logits off by ~1 from float32); 16 bits make
// the error 256× smaller. s[b] is the float32 Σ x of the block itself (Q4_1's m·Σx term is then
// as exact as the float32 kernels' was).

import (
	"math"
	"sync"
)

// tinyBlock: a block of x whose largest |x| is below it becomes zeros (d = 0), an error under
// 2⁻⁹⁶·Σ|w| — where qMax/a_b would overflow float32 (a_b < 2⁻¹¹³), and d_b lose its precision.
const tinyBlock = 0x1p-96

// qMax is the largest |q|: VPMADDWD's pair sums of q with int8 weights cannot overflow.
const qMax = 32767

// qAct is x [32·nb] quantised (q, d, s as above). lay holds the layout the kernel set wants
// (quantKernels.layout); the plain-Go kernels read q.
type qAct struct {
	nb   int
	q    []int16   // [32·nb]
	d    []float32 // [nb padded with zeros to a multiple of 16]
	s    []float32 // [nb padded with zeros to a multiple of 16]
	lay  []int16   // kernel-specific copy of q (SIMD Q4_1: 2 blocks' first then last halves)
	perm []uint32  // kernel-specific lanes of the scales (SIMD Q4_1)
	part []float32 // kernel-specific scratch of quantise (AVX2: partial maxima and sums, 1/scales)
	// dx, sx: d and s times 2^e, padded as d and s; y is the kernel's sum times post = 2^(112−e)
	// (SIMD kernels: scaleForKernels).
	dx, sx []float32
	post   float32
}

var qActPool = sync.Pool{New: func() any { return new(qAct) }}

// resize sizes a for x [32·nb], the padding of d and s zero, and returns nb.
func (a *qAct) resize(x []float32) int {
	nb := len(x) / 32
	pad := (nb + 15) &^ 15
	a.nb = nb
	a.q = grow(a.q, 32*nb)
	a.d = grow(a.d, pad)
	a.s = grow(a.s, pad)
	clear(a.d[nb:])
	clear(a.s[nb:])
	return nb
}

// quantiseX fills a from x [32·nb] (len(x) a multiple of 32).
func quantiseX(x []float32, a *qAct) {
	nb := a.resize(x)
	for b := range nb {
		xb, qb := x[32*b:32*b+32], a.q[32*b:32*b+32]
		var amax, sum float32
		for _, v := range xb {
			amax = max(amax, float32(math.Abs(float64(v))))
			sum += v
		}
		a.s[b] = sum
		switch {
		case sum != sum: // a NaN in x (or +Inf and −Inf): d NaN makes y NaN
			a.d[b] = sum
			clear(qb)
			continue
		case amax < tinyBlock: // also 0
			a.d[b] = 0
			clear(qb)
			continue
		}
		a.d[b] = amax / qMax
		inv := qMax / amax
		for j, v := range xb {
			qb[j] = int16(math.RoundToEven(float64(v * inv)))
		}
	}
}

// grow returns s resized to n, reusing its storage when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
