package fastgo

// The plain-Go packed-row kernels: the reference the SIMD kernels are tested against, and what
// runs without GOEXPERIMENT=simd. A row is in the carrier's planar layout (quant.Planar: the
// nb scales first, then the quants); each weight is dequantised as gguf.Dequantise does (Q4_1:
// float32(d·q) + m; Q8_0: d·q), then multiplied by x [32·nb] and summed in float32. (Their
// third argument, the block sums of x, is for the SIMD Q4_1 kernel.)

var goQuantKernels = quantKernels{name: "go", q4_1: dotQ4_1Go, q8_0: dotQ8_0Go, dequant: dequantRow}

// dotQ4_1Go: row = d f16 × nb, m f16 × nb, 16 bytes × nb (element j < 16 of a block is the low
// nibble of its byte j, element j+16 the high nibble).
func dotQ4_1Go(row []byte, x, _ []float32) float32 {
	nb := len(x) / 32
	q := row[4*nb : 20*nb]
	var s0, s1 float32
	for b := range nb {
		d, m := f16(row[2*b:]), f16(row[2*nb+2*b:])
		qb, xb := q[16*b:16*b+16], x[32*b:32*b+32]
		for j := range 16 {
			s0 += (float32(d*float32(qb[j]&0x0f)) + m) * xb[j]
			s1 += (float32(d*float32(qb[j]>>4)) + m) * xb[j+16]
		}
	}
	return s0 + s1
}

// dotQ8_0Go: row = d f16 × nb, then 32 int8 × nb.
func dotQ8_0Go(row []byte, x, _ []float32) float32 {
	nb := len(x) / 32
	q := row[2*nb : 34*nb]
	var s0, s1 float32
	for b := range nb {
		d := f16(row[2*b:])
		qb, xb := q[32*b:32*b+32], x[32*b:32*b+32]
		for j := range 16 {
			s0 += float32(d*float32(int8(qb[j]))) * xb[j]
			s1 += float32(d*float32(int8(qb[j+16]))) * xb[j+16]
		}
	}
	return s0 + s1
}

// dequantRow writes the weights of a planar row into w [32·nb], as gguf.Dequantise does.
func dequantRow(q4 bool, row []byte, w []float32) {
	nb := len(w) / 32
	for b := range nb {
		wb := w[32*b : 32*b+32]
		d := f16(row[2*b:])
		if q4 {
			m := f16(row[2*nb+2*b:])
			qb := row[4*nb+16*b : 4*nb+16*b+16]
			for j := range 16 {
				wb[j] = float32(d*float32(qb[j]&0x0f)) + m
				wb[j+16] = float32(d*float32(qb[j]>>4)) + m
			}
			continue
		}
		qb := row[2*nb+32*b : 2*nb+32*b+32]
		for j := range 32 {
			wb[j] = d * float32(int8(qb[j]))
		}
	}
}

// blockSums writes Σ x over each 32-element block of x into xs [len(x)/32].
func blockSums(x, xs []float32) {
	for b := range xs {
		var s float32
		for _, v := range x[32*b : 32*b+32] {
			s += v
		}
		xs[b] = s
	}
}
