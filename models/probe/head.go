package probe

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Head names one attention head: layer and head index, both from 0.
type Head struct{ Layer, Head int }

// String is "L3H7" for layer 3, head 7 (the notebooks' and the explorer's label).
func (h Head) String() string { return fmt.Sprintf("L%dH%d", h.Layer, h.Head) }

// Mode is how an ablated head's output is replaced.
type Mode int

const (
	// Zero replaces the head's output z_h by 0 at every position.
	Zero Mode = iota
	// Mean replaces the head's output by Ablation.Means' vector for that head, at every position.
	Mean
)

// String names the mode ("zero", "mean").
func (m Mode) String() string {
	switch m {
	case Zero:
		return "zero"
	case Mean:
		return "mean"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Means holds each head's mean output vector: Data is [Layers, Heads, Dim] row-major.
type Means struct {
	Layers, Heads, Dim int
	Data               []float32
}

// At returns the mean output of one head: [Dim].
func (m *Means) At(h Head) []float32 {
	off := (h.Layer*m.Heads + h.Head) * m.Dim
	return m.Data[off : off+m.Dim]
}

// Ablation says which heads to ablate and how. The zero value ablates nothing.
type Ablation struct {
	Heads []Head
	Mode  Mode
	Means *Means // required with Mean: MeanHeads of a reference run
}

// String is "none", or e.g. "zero L3H7 L5H1".
func (a Ablation) String() string {
	if len(a.Heads) == 0 {
		return "none"
	}
	s := make([]string, len(a.Heads))
	for i, h := range a.Heads {
		s[i] = h.String()
	}
	return a.Mode.String() + " " + strings.Join(s, " ")
}

// Check validates the ablation for a model of layers × heads heads of size dim: one error
// naming the bad head, mode or means.
func (a Ablation) Check(layers, heads, dim int) error {
	for _, h := range a.Heads {
		if h.Layer < 0 || h.Layer >= layers || h.Head < 0 || h.Head >= heads {
			return fmt.Errorf("probe: head %s outside the model's %d layers × %d heads", h, layers, heads)
		}
	}
	switch a.Mode {
	case Zero:
	case Mean:
		if len(a.Heads) == 0 {
			return nil
		}
		if a.Means == nil {
			return errors.New("probe: mean-ablation needs Means (MeanHeads of a reference run)")
		}
		m := a.Means
		if m.Layers != layers || m.Heads != heads || m.Dim != dim || len(m.Data) != layers*heads*dim {
			return fmt.Errorf("probe: means are [%d, %d, %d] (%d values), the model needs [%d, %d, %d]",
				m.Layers, m.Heads, m.Dim, len(m.Data), layers, heads, dim)
		}
	default:
		return fmt.Errorf("probe: unknown ablation mode %d", int(a.Mode))
	}
	return nil
}

// Inputs returns the graph inputs Apply reads, after Check: keep [layers, heads] (1 for a head
// left alone, 0 for an ablated one) and replace [layers, heads, dim] (what an ablated head
// outputs instead: 0, or its mean). Passing them as inputs, not constants, lets one compiled
// graph serve every ablation.
func (a Ablation) Inputs(layers, heads, dim int) (keep, replace *tensors.Tensor, err error) {
	if err := a.Check(layers, heads, dim); err != nil {
		return nil, nil, err
	}
	k := make([]float32, layers*heads)
	for i := range k {
		k[i] = 1
	}
	r := make([]float32, layers*heads*dim)
	for _, h := range a.Heads {
		k[h.Layer*heads+h.Head] = 0
		if a.Mode == Mean {
			copy(r[(h.Layer*heads+h.Head)*dim:], a.Means.At(h))
		}
	}
	return tensors.FromFlatDataAndDimensions(k, layers, heads), tensors.FromFlatDataAndDimensions(r, layers, heads, dim), nil
}
