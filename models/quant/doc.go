// Package quant keeps a model's GGUF-quantised matrices packed (Q8_0, Q4_1) inside a GoMLX
// graph, so that a matrix–vector product reads 0.625 (Q4_1) or 1.06 (Q8_0) bytes per weight
// instead of the 4 of a dequantised float32 matrix.
//
// GoMLX v0.26 has no custom-call op and its DotGeneral takes operands of one dtype, so a packed
// matrix travels as a float32 tensor of raw words — a carrier (Carrier): a header (magic, format,
// rows, columns) followed by the GGUF blocks, byte for byte. Dot builds a DotGeneral whose
// shapes make the carrier an operand and give the product's shape: x [..., cols] is viewed as
// [Bt, M, C] and the carrier as [Bt, C, N] (Bt·C = cols, Bt·N = rows), the product
// [Bt, M, N] is y [..., rows]. Only a DotGeneral executor that recognises the header computes
// the right numbers (fastgo's, on the pure-Go backend: it multiplies the packed blocks inside
// its matrix–vector kernel); any other executor would multiply the raw words. So a model builds
// this graph only when Available says such an executor is installed, and otherwise keeps its
// float32 weights (XLA has no executor that reads a carrier; expressing the dequantisation in
// XLA's own ops would make it materialise the float32 matrix before its dot).
//
// The numbers: fastgo's kernel computes each block's share of a row's sum as d·Σq·x (+ m·Σx
// for Q4_1) — the sum Σ(d·q + m)·x of the dequantised weights, regrouped — so decoding steps
// differ from the float32 path by summation-order rounding only; a prompt (M > 1 rows of x)
// dequantises the weights exactly as gguf.Dequantise does and uses the float32 GEMM, equal to
// the float32 path bit for bit. MatVec is the plain reference (dequantise, sum in float64).
package quant
