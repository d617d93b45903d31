package fastgo

// The activation side of a packed matrix–vector product: x [cols] quantised once per product
// to 8-bit blocks of 32, as the weights are, so that the kernels multiply integers (Q4_1's
// unsigned nibbles or Q8_0's int8 by int8) and scale once per block. A block b of x becomes
//
//	q[32b+j] = roundToEven(x[32b+j]·127/a_b),  d[b] = a_b/127,  a_b = max_j |x[32b+j]|
//
// so |x − d·q| ≤ d/2 per element (plus float32 rounding): the product's error is Σ |w|·d/2
// over the row, the error llama.cpp's Q8 activations make too — larger than float32 rounding
// but far inside the weights' own quantisation error (a Q4_1 weight is off by up to d_w/2,
// 1/30 of its block's range; an activation by 1/254 of its block's). |q| ≤ 127, so the
// kernels' pair sums fit int16 (Q4_1: 2·15·127; Q8_0: 2·128·127 ≤ 32767). s[b] is the float32
// Σ x of the block itself (Q4_1's m·Σx term is then as exact as the float32 kernels' was).

import (
	"math"
	"sync"
)

// q8Act is x [32·nb] quantised (q, d, s as above). lay holds the layout the kernel set wants
// (quantKernels.layout); the plain-Go kernels read q.
type q8Act struct {
	nb   int
	q    []int8    // [32·nb]
	d    []float32 // [nb padded with zeros to a multiple of 16]
	s    []float32 // [nb padded with zeros to a multiple of 16]
	lay  []int8    // kernel-specific copy of q (SIMD Q4_1: 4 blocks' low then high halves)
	l16  []int16   // kernel-specific int16 copy of q (SIMD Q8_0)
	tail [64]uint8 // kernel-specific permutation (SIMD Q4_1's last blocks)
}

var q8Pool = sync.Pool{New: func() any { return new(q8Act) }}

// quantiseQ8 fills a from x [32·nb] (len(x) a multiple of 32).
func quantiseQ8(x []float32, a *q8Act) {
	nb := len(x) / 32
	pad := (nb + 15) &^ 15
	a.nb = nb
	a.q = grow(a.q, 32*nb)
	a.d = grow(a.d, pad)
	a.s = grow(a.s, pad)
	clear(a.d[nb:])
	clear(a.s[nb:])
	for b := range nb {
		xb, qb := x[32*b:32*b+32], a.q[32*b:32*b+32]
		var amax, sum float32
		for _, v := range xb {
			amax = max(amax, float32(math.Abs(float64(v))))
			sum += v
		}
		a.s[b] = sum
		if amax == 0 {
			a.d[b] = 0
			clear(qb)
			continue
		}
		a.d[b] = amax / 127
		inv := 127 / amax
		for j, v := range xb {
			qb[j] = int8(math.RoundToEven(float64(v * inv)))
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
