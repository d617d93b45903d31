package mhatest

import (
	"fmt"
	"math"
)

// Masks, as PyTorch defines them, and their conversion to one additive bias.
//
// Every mask ends up as a float tensor of shape [B, h, Lq, Lk] next to the
// attention logits: a bias that is added to them (0 where query i may attend
// to key j, `fill` where it may not), or, for bool and causal masks, a 0/1
// "blocked" tensor whose positions get the fill (masked_fill, see
// MaskSpec.Parts). Each kind of mask has its own small conversion function
// below, so that each convention can be read (and tested) on its own.

// MaskKind says how the values of a Mask are read. The convention is in the
// name, because PyTorch uses both:
//
//   - BlockedWhereTrue: bool, true = NOT allowed. nn.MultiheadAttention's
//     attn_mask and key_padding_mask.
//   - AttendWhereTrue: bool, true = allowed. F.scaled_dot_product_attention's
//     attn_mask.
//   - Additive: float, added to the logits as is (0 = allowed, −Inf = blocked,
//     anything else shifts the logit).
type MaskKind int

const (
	NoMask MaskKind = iota
	BlockedWhereTrue
	AttendWhereTrue
	Additive
)

// String names the kind.
func (k MaskKind) String() string {
	switch k {
	case NoMask:
		return "NoMask"
	case BlockedWhereTrue:
		return "BlockedWhereTrue"
	case AttendWhereTrue:
		return "AttendWhereTrue"
	case Additive:
		return "Additive"
	}
	return fmt.Sprintf("MaskKind(%d)", int(k))
}

// Mask is a boolean or float mask with a shape, row-major like Tensor.
// The zero value is "no mask". Build one with NewBoolMask, BoolMaskRows or
// NewAdditiveMask.
type Mask struct {
	Kind  MaskKind
	Shape []int
	Bool  []bool    // Kind BlockedWhereTrue or AttendWhereTrue
	Float []float64 // Kind Additive
}

// NewBoolMask wraps a copy of data, in the convention kind (BlockedWhereTrue
// or AttendWhereTrue), with the given shape. It panics on a size mismatch or
// a non-bool kind.
func NewBoolMask(kind MaskKind, data []bool, shape ...int) Mask {
	if kind != BlockedWhereTrue && kind != AttendWhereTrue {
		panic(fmt.Errorf("mhatest: NewBoolMask: kind %s is not a bool convention", kind))
	}
	if len(data) != sizeOf(shape) {
		panic(fmt.Errorf("mhatest: NewBoolMask: %d values do not fill shape %v", len(data), shape))
	}
	return Mask{Kind: kind, Shape: append([]int{}, shape...), Bool: append([]bool{}, data...)}
}

// BoolMaskRows builds a 2-D bool mask [len(rows), len(rows[0])] from rows,
// e.g. BoolMaskRows(AttendWhereTrue, CausalTopLeft(3, 3)).
func BoolMaskRows(kind MaskKind, rows [][]bool) Mask {
	var data []bool
	cols := 0
	if len(rows) > 0 {
		cols = len(rows[0])
	}
	for i, row := range rows {
		if len(row) != cols {
			panic(fmt.Errorf("mhatest: BoolMaskRows: row %d has %d entries, row 0 has %d", i, len(row), cols))
		}
		data = append(data, row...)
	}
	return NewBoolMask(kind, data, len(rows), cols)
}

// NewAdditiveMask uses the values of t as an additive float mask.
func NewAdditiveMask(t *Tensor) Mask {
	return Mask{Kind: Additive, Shape: append([]int{}, t.Shape...), Float: append([]float64{}, t.Data...)}
}

// IsZero reports whether m is "no mask".
func (m Mask) IsZero() bool { return m.Kind == NoMask }

// biasAt is the additive bias for the element at flat position pos:
// 0 or fill for bool masks, the value itself for additive masks.
func (m Mask) biasAt(pos int, fill float64) float64 {
	switch m.Kind {
	case BlockedWhereTrue:
		if m.Bool[pos] {
			return fill
		}
		return 0
	case AttendWhereTrue:
		if m.Bool[pos] {
			return 0
		}
		return fill
	case Additive:
		return m.Float[pos]
	}
	return 0
}

// check verifies that the data length matches the shape.
func (m Mask) check(name string) error {
	n := sizeOf(m.Shape)
	switch m.Kind {
	case BlockedWhereTrue, AttendWhereTrue:
		if len(m.Bool) != n {
			return fmt.Errorf("mhatest: %s: %d bool values for shape %v", name, len(m.Bool), m.Shape)
		}
	case Additive:
		if len(m.Float) != n {
			return fmt.Errorf("mhatest: %s: %d float values for shape %v", name, len(m.Float), m.Shape)
		}
	case NoMask:
	default:
		return fmt.Errorf("mhatest: %s: unknown mask kind %d", name, int(m.Kind))
	}
	return nil
}

// DefaultFill returns the value written where a bool or causal mask blocks a
// logit, when no other fill is chosen: −Inf, as PyTorch does.
func DefaultFill() float64 { return math.Inf(-1) }

// Causal selects a causal mask. The two corners differ only when Lq ≠ Lk.
type Causal int

const (
	// NoCausal: no causal mask.
	NoCausal Causal = iota
	// TopLeft: query i sees keys j ≤ i (F.scaled_dot_product_attention's
	// is_causal=True; torch.tril(ones(Lq, Lk))). See CausalTopLeft.
	TopLeft
	// BottomRight: query i sees keys j ≤ i + Lk − Lq, i.e. the last query
	// sees every key (decoding with a KV cache). See CausalBottomRight.
	BottomRight
)

// String names the causal kind.
func (c Causal) String() string {
	switch c {
	case NoCausal:
		return "NoCausal"
	case TopLeft:
		return "TopLeft"
	case BottomRight:
		return "BottomRight"
	}
	return fmt.Sprintf("Causal(%d)", int(c))
}

// CausalTopLeft returns allowed[i][j] = (j ≤ i), shape [Lq][Lk]
// (true = may attend, the AttendWhereTrue convention).
//
//	Lq=2, Lk=3:  [1 0 0]
//	             [1 1 0]
func CausalTopLeft(Lq, Lk int) [][]bool {
	allowed := make([][]bool, Lq)
	for i := range allowed {
		allowed[i] = make([]bool, Lk)
		for j := 0; j < Lk; j++ {
			allowed[i][j] = j <= i
		}
	}
	return allowed
}

// CausalBottomRight returns allowed[i][j] = (j ≤ i + Lk − Lq), shape [Lq][Lk]
// (true = may attend). The diagonal ends in the bottom-right corner.
//
//	Lq=2, Lk=3:  [1 1 0]
//	             [1 1 1]
func CausalBottomRight(Lq, Lk int) [][]bool {
	allowed := make([][]bool, Lq)
	for i := range allowed {
		allowed[i] = make([]bool, Lk)
		for j := 0; j < Lk; j++ {
			allowed[i][j] = j <= i+Lk-Lq
		}
	}
	return allowed
}

// CausalBias converts a causal kind to a bias [B, h, Lq, Lk]: 0 where
// allowed, fill where not. NoCausal gives all zeros.
func CausalBias(c Causal, B, h, Lq, Lk int, fill float64) (*Tensor, error) {
	var allowed [][]bool
	switch c {
	case NoCausal:
		return New(B, h, Lq, Lk), nil
	case TopLeft:
		allowed = CausalTopLeft(Lq, Lk)
	case BottomRight:
		allowed = CausalBottomRight(Lq, Lk)
	default:
		return nil, fmt.Errorf("mhatest: unknown causal kind %d", int(c))
	}
	bias := New(B, h, Lq, Lk)
	for b := 0; b < B; b++ {
		for head := 0; head < h; head++ {
			for i := 0; i < Lq; i++ {
				for j := 0; j < Lk; j++ {
					if !allowed[i][j] {
						bias.Set(fill, b, head, i, j)
					}
				}
			}
		}
	}
	return bias, nil
}

// AttnMaskBias converts an attention mask to a bias [B, h, Lq, Lk].
// Accepted shapes of m:
//
//	[Lq, Lk]         the same mask for every batch element and head
//	[B·h, Lq, Lk]    PyTorch's 3-D form: row b·h + head holds (batch b, head)
//	[B, h, Lq, Lk]   one mask per batch element and head
//	[B, 1, Lq, Lk]   one mask per batch element, shared by the heads
//
// Bool masks give 0 or fill; additive masks give their value. A zero Mask
// gives all zeros.
func AttnMaskBias(m Mask, B, h, Lq, Lk int, fill float64) (*Tensor, error) {
	bias := New(B, h, Lq, Lk)
	if m.IsZero() {
		return bias, nil
	}
	if err := m.check("attn_mask"); err != nil {
		return nil, err
	}
	// maskRow(b, head) is the index of the [Lq, Lk] matrix inside m to use.
	var maskRow func(b, head int) int
	switch {
	case SameShape(m.Shape, []int{Lq, Lk}):
		maskRow = func(b, head int) int { return 0 }
	case SameShape(m.Shape, []int{B * h, Lq, Lk}):
		maskRow = func(b, head int) int { return b*h + head }
	case SameShape(m.Shape, []int{B, h, Lq, Lk}):
		maskRow = func(b, head int) int { return b*h + head }
	case SameShape(m.Shape, []int{B, 1, Lq, Lk}):
		maskRow = func(b, head int) int { return b }
	default:
		return nil, fmt.Errorf("mhatest: attn_mask shape %v, want [%d %d], [%d %d %d], [%d %d %d %d] or [%d 1 %d %d] (Lq=%d, Lk=%d, B=%d, h=%d)",
			m.Shape, Lq, Lk, B*h, Lq, Lk, B, h, Lq, Lk, B, Lq, Lk, Lq, Lk, B, h)
	}
	for b := 0; b < B; b++ {
		for head := 0; head < h; head++ {
			for i := 0; i < Lq; i++ {
				for j := 0; j < Lk; j++ {
					pos := (maskRow(b, head)*Lq+i)*Lk + j
					bias.Set(m.biasAt(pos, fill), b, head, i, j)
				}
			}
		}
	}
	return bias, nil
}

// KeyPaddingBias converts a key padding mask m [B, Lk] to a bias
// [B, h, Lq, Lk]: key j of batch element b is hidden from every query and
// every head. PyTorch's bool key_padding_mask is BlockedWhereTrue (true =
// padding); a float mask is added as is. A zero Mask gives all zeros.
func KeyPaddingBias(m Mask, B, h, Lq, Lk int, fill float64) (*Tensor, error) {
	bias := New(B, h, Lq, Lk)
	if m.IsZero() {
		return bias, nil
	}
	if err := m.check("key_padding_mask"); err != nil {
		return nil, err
	}
	if !SameShape(m.Shape, []int{B, Lk}) {
		return nil, fmt.Errorf("mhatest: key_padding_mask shape %v, want [%d %d] (B, Lk)", m.Shape, B, Lk)
	}
	for b := 0; b < B; b++ {
		for head := 0; head < h; head++ {
			for i := 0; i < Lq; i++ {
				for j := 0; j < Lk; j++ {
					bias.Set(m.biasAt(b*Lk+j, fill), b, head, i, j)
				}
			}
		}
	}
	return bias, nil
}

// MaskSpec gathers every mask of one attention call. The zero value means no
// masking at all.
type MaskSpec struct {
	AttnMask       Mask   // see AttnMaskBias for shapes
	KeyPaddingMask Mask   // [B, Lk], see KeyPaddingBias
	Causal         Causal // see CausalBias
	// Fill is the value of a blocked logit for bool and causal masks.
	// 0 (the zero value) means DefaultFill, −Inf. Seed 000 uses −1e9
	// (masked_fill(mask == 0, -1e9)), with which a fully masked row gets
	// uniform weights instead of zeros (through Parts and SDPAMaskedFill).
	Fill float64
}

// FillValue is s.Fill, or DefaultFill when s.Fill is 0.
func (s MaskSpec) FillValue() float64 {
	if s.Fill == 0 {
		return DefaultFill()
	}
	return s.Fill
}

// IsZero reports whether s masks nothing.
func (s MaskSpec) IsZero() bool {
	return s.AttnMask.IsZero() && s.KeyPaddingMask.IsZero() && s.Causal == NoCausal
}

// Parts splits the masks of s into the two ways they act on a logit:
//
//   - additive [B, h, Lq, Lk]: the sum of the Additive (float) masks, added
//     to the logits; nil if there is none;
//   - blocked [B, h, Lq, Lk]: 1 where a bool or causal mask blocks the
//     position, 0 elsewhere; nil if there is none. Blocked logits are
//     replaced by the fill (masked_fill), see SDPAMaskedFill.
//
// With fill = −Inf, replacing and adding give the same logits; with a finite
// fill such as −1e9 they differ for fully masked rows: replacing makes every
// logit −1e9 and the weights uniform (seed 000), adding in float64 keeps the
// differences of the original logits.
func (s MaskSpec) Parts(B, h, Lq, Lk int) (additive, blocked *Tensor, err error) {
	for _, part := range []struct {
		m    Mask
		conv func(Mask, int, int, int, int, float64) (*Tensor, error)
	}{{s.AttnMask, AttnMaskBias}, {s.KeyPaddingMask, KeyPaddingBias}} {
		switch part.m.Kind {
		case NoMask:
		case Additive:
			bias, err := part.conv(part.m, B, h, Lq, Lk, 0)
			if err != nil {
				return nil, nil, err
			}
			additive = AddBias(additive, bias)
		default: // a bool mask: fill 1 marks blocked positions
			ones, err := part.conv(part.m, B, h, Lq, Lk, 1)
			if err != nil {
				return nil, nil, err
			}
			blocked = orBlocked(blocked, ones)
		}
	}
	if s.Causal != NoCausal {
		ones, err := CausalBias(s.Causal, B, h, Lq, Lk, 1)
		if err != nil {
			return nil, nil, err
		}
		blocked = orBlocked(blocked, ones)
	}
	return additive, blocked, nil
}

// orBlocked is the union of two 0/1 blocked tensors; nil counts as all 0.
func orBlocked(a, b *Tensor) *Tensor {
	if a == nil {
		return b
	}
	union := a.Clone()
	for i, v := range b.Data {
		if v != 0 {
			union.Data[i] = 1
		}
	}
	return union
}

// Bias builds one additive bias [B, h, Lq, Lk] of all masks in s, or nil if
// s masks nothing: the Additive masks summed, plus fill at every position a
// bool or causal mask blocks (see Parts).
//
// With the default fill −Inf this is exactly what PyTorch computes
// (bool masks become −Inf, then attn_mask + key_padding_mask). With a finite
// fill, adding is not masked_fill: use Parts and SDPAMaskedFill (as MHA
// does) to reproduce masked_fill(mask == 0, −1e9).
func (s MaskSpec) Bias(B, h, Lq, Lk int) (*Tensor, error) {
	if s.IsZero() {
		return nil, nil
	}
	additive, blocked, err := s.Parts(B, h, Lq, Lk)
	if err != nil {
		return nil, err
	}
	if blocked != nil {
		fill := s.FillValue()
		filled := New(blocked.Shape...)
		for i, v := range blocked.Data {
			if v != 0 {
				filled.Data[i] = fill
			}
		}
		additive = AddBias(additive, filled)
	}
	return additive, nil
}

// AddBias returns a + b for two biases of the same shape; nil counts as zero.
// It panics if the shapes differ.
func AddBias(a, b *Tensor) *Tensor {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if !SameShape(a.Shape, b.Shape) {
		panic(fmt.Errorf("mhatest: AddBias: shape %v differs from shape %v", a.Shape, b.Shape))
	}
	sum := a.Clone()
	for i := range sum.Data {
		sum.Data[i] += b.Data[i]
	}
	return sum
}

// PadKeyColumns appends n allowed (0) key columns to a bias or a blocked
// tensor: [B, h, Lq, Lk] → [B, h, Lq, Lk+n]. This is PyTorch's F.pad(mask, (0, 1))
// done for add_bias_kv and add_zero_attn. A nil bias stays nil.
func PadKeyColumns(bias *Tensor, n int) *Tensor {
	if bias == nil {
		return nil
	}
	B, h, Lq, Lk := bias.Shape[0], bias.Shape[1], bias.Shape[2], bias.Shape[3]
	out := New(B, h, Lq, Lk+n)
	for b := 0; b < B; b++ {
		for head := 0; head < h; head++ {
			for i := 0; i < Lq; i++ {
				for j := 0; j < Lk; j++ {
					out.Set(bias.At(b, head, i, j), b, head, i, j)
				}
			}
		}
	}
	return out
}
