package probe

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Array is a float32 array on the host: Data in row-major order of Shape.
type Array struct {
	Shape []int
	Data  []float32
}

// ArrayOf copies a float32 tensor to the host and frees it.
func ArrayOf(t *tensors.Tensor) (Array, error) {
	data, err := tensors.CopyFlatData[float32](t)
	if err != nil {
		return Array{}, err
	}
	a := Array{Shape: t.Shape().Dimensions, Data: data}
	t.FinalizeAll()
	return a, nil
}

// Row returns the last axis at the leading indices idx (len(idx) = rank − 1), sharing Data.
func (a Array) Row(idx ...int) []float32 {
	if len(idx) != len(a.Shape)-1 {
		panic(fmt.Errorf("probe: Row%v of an array of shape %v: want %d indices", idx, a.Shape, len(a.Shape)-1))
	}
	off := 0
	for i, x := range idx {
		if x < 0 || x >= a.Shape[i] {
			panic(fmt.Errorf("probe: Row%v of an array of shape %v: index %d out of range", idx, a.Shape, i))
		}
		off = off*a.Shape[i] + x
	}
	n := a.Shape[len(a.Shape)-1]
	return a.Data[off*n : (off+1)*n]
}

// At returns one element (len(idx) = rank).
func (a Array) At(idx ...int) float32 { return a.Row(idx[:len(idx)-1]...)[idx[len(idx)-1]] }

// Trace is what a traced run returns for a batch of B sequences padded to L tokens (positions
// at or past a sequence's length hold values nothing uses).
type Trace struct {
	// Residual[l] is the residual stream entering layer l, [B, L, D]; Residual[0] is the
	// embeddings' output and Residual[layers] the last layer's output (layers + 1 entries).
	Residual []Array
	// Heads[l] is every head's output in layer l before the output projection, after the
	// ablation: [B, H, L, dk].
	Heads []Array
	// Attention[l] is layer l's attention weights [B, H, L, L] (query rows, key columns).
	Attention []Array
}

// MeanHeads averages every head's output over the positions from … length−1 of each sequence
// (lengths[b] for sequence b), in float64: the Means a mean-ablation replaces heads with.
// from = 1 leaves out the first position, which in a causal model attends only to itself.
func MeanHeads(tr Trace, lengths []int, from int) (*Means, error) {
	if len(tr.Heads) == 0 {
		return nil, fmt.Errorf("probe: MeanHeads needs a trace with head outputs (run with Trace)")
	}
	s := tr.Heads[0].Shape // [B, H, L, dk]
	B, H, L, dk := s[0], s[1], s[2], s[3]
	if len(lengths) != B {
		return nil, fmt.Errorf("probe: MeanHeads: %d lengths for a batch of %d", len(lengths), B)
	}
	m := &Means{Layers: len(tr.Heads), Heads: H, Dim: dk, Data: make([]float32, len(tr.Heads)*H*dk)}
	count := 0
	for b := range B {
		if lengths[b] > L {
			return nil, fmt.Errorf("probe: MeanHeads: length %d of sequence %d above the padded length %d", lengths[b], b, L)
		}
		count += max(0, lengths[b]-from)
	}
	if count == 0 {
		return nil, fmt.Errorf("probe: MeanHeads: no positions from %d on in lengths %v", from, lengths)
	}
	sum := make([]float64, dk)
	for l, a := range tr.Heads {
		for h := range H {
			clear(sum)
			for b := range B {
				for p := from; p < lengths[b]; p++ {
					for i, v := range a.Row(b, h, p) {
						sum[i] += float64(v)
					}
				}
			}
			out := m.At(Head{l, h})
			for i := range sum {
				out[i] = float32(sum[i] / float64(count))
			}
		}
	}
	return m, nil
}
