package smollm2

import (
	"github.com/mhalab/mhalab/models/quant"
)

// A packed runner multiplies one token by each layer's matrices one matrix–vector product at a
// time; every product is a node of its own, with its own pass over the token and its own
// start and join of the worker goroutines. Matrices that read the same input are therefore
// stacked into one carrier when they share a format: the rows of q_proj, k_proj and v_proj
// ([H·hd + 2·Hkv·hd, D], "qkv_proj") and of gate_proj and up_proj ([2F, D], "gate_up_proj").
// Each output row is the same dot product of the same packed row as before, so the results
// do not change (TestFusedEqualsSeparate).

// fusions lists the stacked matrices of layer path: the fused module path and its parts, in
// the order of their rows.
func fusions(path string) [][]string {
	return [][]string{
		{qkvPath(path), path + ".self_attn.q_proj", path + ".self_attn.k_proj", path + ".self_attn.v_proj"},
		{gateUpPath(path), path + ".mlp.gate_proj", path + ".mlp.up_proj"},
	}
}

// qkvPath is the module path of layer path's stacked q, k, v projections.
func qkvPath(path string) string { return path + ".self_attn.qkv_proj" }

// gateUpPath is the module path of layer path's stacked gate and up projections.
func gateUpPath(path string) string { return path + ".mlp.gate_up_proj" }

// scopeOf is the variable scope of module path (its weight's scope).
func scopeOf(path string) string {
	scope, _ := splitName(path + ".weight")
	return scope
}

// stack returns the packed matrices of parts (module paths) stacked row after row, or false
// when one of them is not packed (a float32 runner, a replaced tensor) or they differ in format
// or columns.
func (w *Weights) stack(parts []string) (*quant.Matrix, bool) {
	var first *quant.Matrix
	rows, size := 0, 0
	ms := make([]*quant.Matrix, len(parts))
	for i, p := range parts {
		m, ok := w.packed(p + ".weight")
		if !ok || first != nil && (m.Format != first.Format || m.Cols != first.Cols) {
			return nil, false
		}
		if first == nil {
			first = m
		}
		ms[i] = m
		rows += m.Rows
		size += len(m.Data)
	}
	data := make([]byte, 0, size)
	for _, m := range ms {
		data = append(data, m.Data...)
	}
	stacked, err := quant.NewMatrix(first.Format, rows, first.Cols, data)
	if err != nil {
		return nil, false // not reached: the parts were checked when they were read
	}
	return stacked, true
}
