package fastgo

// The plain-Go packed-row kernels: the reference the SIMD kernels are tested against, and what
// runs without GOEXPERIMENT=simd. A row is in the carrier's planar layout (quant.Planar: the
// nb scales first, then the quants); x comes quantised to 16-bit blocks (a, quant_act.go). Each
// block's weights are multiplied by a.q in integers (exact), and the block adds
//
//	Q4_1: d_w·d_a·Σ q_w·q_a + m_w·Σx     Q8_0: d_w·d_a·Σ q_w·q_a
//
// in float32, block after block. The SIMD kernels compute the same integer sums.

var goQuantKernels = quantKernels{name: "go", quantise: quantiseX, q4_1: eachRow(rowQ4_1, 20), q8_0: eachRow(rowQ8_0, 34), dequant: dequantRow}

// eachRow makes a kernel of a row's product: y[i] = row i · x for the len(y) rows at rows,
// blockBytes·nb bytes each.
func eachRow(dot func(row []byte, a *qAct) float32, blockBytes int) func(rows []byte, a *qAct, y []float32) {
	return func(rows []byte, a *qAct, y []float32) {
		rb := blockBytes * a.nb
		for i := range y {
			y[i] = dot(rows[rb*i:rb*(i+1)], a)
		}
	}
}

// rowQ4_1: row = d f16 × nb, m f16 × nb, 16 bytes × nb (element j < 16 of a block is the low
// nibble of its byte j, element j+16 the high nibble).
func rowQ4_1(row []byte, a *qAct) float32 {
	nb := a.nb
	q := row[4*nb : 20*nb]
	var s float32
	for b := range nb {
		d, m := f16(row[2*b:]), f16(row[2*nb+2*b:])
		qb, ab := q[16*b:16*b+16], a.q[32*b:32*b+32]
		var i int32
		for j := range 16 {
			i += int32(qb[j]&0x0f)*int32(ab[j]) + int32(qb[j]>>4)*int32(ab[j+16])
		}
		s += d*a.d[b]*float32(i) + m*a.s[b]
	}
	return s
}

// rowQ8_0: row = d f16 × nb, then 32 int8 × nb.
func rowQ8_0(row []byte, a *qAct) float32 {
	nb := a.nb
	q := row[2*nb : 34*nb]
	var s float32
	for b := range nb {
		d := f16(row[2*b:])
		qb, ab := q[32*b:32*b+32], a.q[32*b:32*b+32]
		var i int32
		for j := range 32 {
			i += int32(int8(qb[j])) * int32(ab[j])
		}
		s += d * a.d[b] * float32(i)
	}
	return s
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
