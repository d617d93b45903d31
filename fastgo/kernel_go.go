package fastgo

// The plain-Go micro-kernel: a 4×4 tile of C in 16 scalar accumulators. It runs everywhere
// (every GOOS/GOARCH, with or without GOEXPERIMENT=simd) and is the reference the SIMD kernels
// are tested against. Its gain over GoMLX's kernel comes from the packing and blocking alone.

func goKernel[T Float]() microKernel[T] {
	return microKernel[T]{name: "go-4x4", mr: 4, nr: 4, fn: goKernel4x4[T]}
}

// goKernel4x4: a: [kc, 4], b: [kc, 4], c: 4 rows of ≥ 4, ldc apart.
func goKernel4x4[T Float](kc int, a, b, c []T, ldc int, accumulate bool) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 T
	a, b = a[:4*kc], b[:4*kc]
	for len(a) >= 4 && len(b) >= 4 {
		a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
		b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
		a, b = a[4:], b[4:]
	}
	rows := [4][4]T{{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23}, {c30, c31, c32, c33}}
	for i := range 4 {
		dst := c[i*ldc:][:4]
		if accumulate {
			for j := range 4 {
				dst[j] += rows[i][j]
			}
		} else {
			copy(dst, rows[i][:])
		}
	}
}
