package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// TensorFloat32 reads the named tensor and dequantises it to float32, row-major, with its
// row-major shape (TensorInfo.Shape). Types F32, F16, Q8_0 and Q4_1 are read; any other type is
// an error wrapping ErrUnsupportedType that names the tensor and its type.
func (f *File) TensorFloat32(name string) ([]float32, []int, error) {
	t, err := f.Tensor(name)
	if err != nil {
		return nil, nil, err
	}
	if !t.Type.Dequantisable() {
		return nil, nil, fmt.Errorf("%w: %s: tensor %q has type %s: %w (this reader dequantises F32, F16, Q8_0 and Q4_1)",
			ErrFormat, f.Name, name, t.Type, ErrUnsupportedType)
	}
	raw, _, err := f.TensorBytes(name)
	if err != nil {
		return nil, nil, err
	}
	out := make([]float32, t.NumElements())
	if err := Dequantise(t.Type, raw, out); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: tensor %q: %w", ErrFormat, f.Name, name, err)
	}
	return out, t.Shape(), nil
}

// Dequantise decodes len(out) elements of type t from raw into out. raw must hold exactly
// len(out)/BlockSize blocks.
func Dequantise(t TensorType, raw []byte, out []float32) error {
	bs, bb := t.BlockSize(), t.BlockBytes()
	if !t.Dequantisable() {
		return fmt.Errorf("type %s: %w", t, ErrUnsupportedType)
	}
	if len(out)%bs != 0 || len(raw) != len(out)/bs*bb {
		return fmt.Errorf("%s: %d bytes for %d elements, want %d", t, len(raw), len(out), len(out)/bs*bb)
	}
	le := binary.LittleEndian
	switch t {
	case TensorF32:
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
	case TensorF16:
		for i := range out {
			out[i] = Float16(le.Uint16(raw[2*i:]))
		}
	case TensorQ8_0:
		// Block of 32: {d f16, q [32]int8}; x = d·q.
		for b := 0; b < len(out)/32; b++ {
			blk := raw[b*34 : b*34+34]
			d := Float16(le.Uint16(blk))
			y := out[b*32 : b*32+32]
			for j := range y {
				y[j] = d * float32(int8(blk[2+j]))
			}
		}
	case TensorQ4_1:
		// Block of 32: {d f16, m f16, q [16]byte}; element j < 16 is the low nibble of q[j],
		// element j+16 its high nibble; x = d·q + m.
		for b := 0; b < len(out)/32; b++ {
			blk := raw[b*20 : b*20+20]
			d, m := Float16(le.Uint16(blk)), Float16(le.Uint16(blk[2:]))
			y := out[b*32 : b*32+32]
			for j := 0; j < 16; j++ {
				q := blk[4+j]
				// The explicit float32 conversions keep the multiply and the add separately
				// rounded (no fused multiply-add), as in ggml and NumPy.
				y[j] = float32(d*float32(q&0x0f)) + m
				y[j+16] = float32(d*float32(q>>4)) + m
			}
		}
	}
	return nil
}

// Float16 converts an IEEE 754 half-precision number (its bits) to float32, exactly.
func Float16(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp != 0: // normal: rebias 15 → 127
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal: mant · 2^-24, exact in float32.
	v := float32(mant) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}
