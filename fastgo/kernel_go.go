package fastgo

// The plain-Go micro-kernel: a 2×2 tile of C in 4 scalar accumulators. It runs everywhere (every
// GOOS/GOARCH, with or without GOEXPERIMENT=simd) and is what the SIMD kernels are tested
// against. Its gain over GoMLX's kernel comes from packing and blocking: the packed panels are
// read sequentially and stay in cache. Larger scalar tiles (4×2, 4×4) measured slower with Go
// 1.26: their accumulators and operands do not fit the 16 floating-point registers, and spill.

func goKernel[T Float]() microKernel[T] {
	return microKernel[T]{name: "go-2x2", mr: 2, nr: 2, fn: goKernel2x2[T]}
}

// goKernel2x2: a: [kc, 2], b: [kc, 2], c: 2 rows of ≥ 2, ldc apart.
func goKernel2x2[T Float](kc int, a, b, c []T, ldc int, accumulate bool) {
	var c00, c01, c10, c11 T
	a, b = a[:2*kc], b[:2*kc]
	for len(a) >= 2 && len(b) >= 2 {
		a0, a1, b0, b1 := a[0], a[1], b[0], b[1]
		c00 += a0 * b0
		c01 += a0 * b1
		c10 += a1 * b0
		c11 += a1 * b1
		a, b = a[2:], b[2:]
	}
	row0, row1 := c[:2], c[ldc:][:2]
	if accumulate {
		c00 += row0[0]
		c01 += row0[1]
		c10 += row1[0]
		c11 += row1[1]
	}
	row0[0], row0[1] = c00, c01
	row1[0], row1[1] = c10, c11
}
