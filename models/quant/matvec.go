package quant

// MatVec is the readable reference of the product a carrier's executor computes: y[m, r] =
// Σ_c W[r, c]·x[m, c] for x [M, Cols] (row-major) and the packed W, each row dequantised as
// gguf.Dequantise does and summed in float64, then rounded to float32. y is [M, Rows].
func (w *Matrix) MatVec(x []float32, M int) []float32 {
	y := make([]float32, M*w.Rows)
	row := make([]float32, w.Cols)
	one := &Matrix{Format: w.Format, Rows: 1, Cols: w.Cols}
	for r := range w.Rows {
		one.Data = w.Row(r)
		copy(row, one.Dequantise())
		for m := range M {
			xm := x[m*w.Cols : (m+1)*w.Cols]
			var s float64
			for c, v := range row {
				s += float64(v) * float64(xm[c])
			}
			y[m*w.Rows+r] = float32(s)
		}
	}
	return y
}
