package fastgo

// The plain-Go packed-row kernels: the reference the SIMD kernels are tested against, and what
// runs without GOEXPERIMENT=simd. Each weight is dequantised as gguf.Dequantise does (Q4_1:
// float32(d·q) + m; Q8_0: d·q), then multiplied by x and summed in float32.

var goQuantKernels = quantKernels{name: "go", q4_1: dotQ4_1Go, q8_0: dotQ8_0Go, dot: dotF32Go}

// dotQ4_1Go: blocks of 20 bytes {f16 d, f16 m, 16 bytes: element j the low nibble of byte j,
// element j+16 its high nibble}.
func dotQ4_1Go(blocks []byte, x []float32) float32 {
	var s0, s1 float32
	for len(blocks) >= 20 && len(x) >= 32 {
		d, m := f16(blocks), f16(blocks[2:])
		q := blocks[4:20]
		for j := range 16 {
			s0 += (float32(d*float32(q[j]&0x0f)) + m) * x[j]
			s1 += (float32(d*float32(q[j]>>4)) + m) * x[j+16]
		}
		blocks, x = blocks[20:], x[32:]
	}
	return s0 + s1
}

// dotQ8_0Go: blocks of 34 bytes {f16 d, 32 int8}.
func dotQ8_0Go(blocks []byte, x []float32) float32 {
	var s0, s1 float32
	for len(blocks) >= 34 && len(x) >= 32 {
		d := f16(blocks)
		q := blocks[2:34]
		for j := range 16 {
			s0 += d * float32(int8(q[j])) * x[j]
			s1 += d * float32(int8(q[j+16])) * x[j+16]
		}
		blocks, x = blocks[34:], x[32:]
	}
	return s0 + s1
}

func dotF32Go(a, b []float32) float32 {
	var s float32
	b = b[:len(a)]
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
