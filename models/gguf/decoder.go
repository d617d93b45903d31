package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// maxArrayDepth bounds arrays nested in arrays (real files use none).
const maxArrayDepth = 8

// decoder reads the header of a GGUF file sequentially, knowing how many bytes remain, so
// that every count and length can be checked before it is used to allocate.
type decoder struct {
	r    *bufio.Reader
	pos  int64 // bytes consumed
	size int64 // file size
	buf  [8]byte
}

func newDecoder(r io.ReaderAt, size int64) *decoder {
	return &decoder{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<16), size: size}
}

func (d *decoder) remaining() int64 { return d.size - d.pos }

// errTruncated says what was being read when the file ended.
func (d *decoder) errTruncated(what string) error {
	return fmt.Errorf("truncated: the file ends (%d bytes) while reading %s at byte %d", d.size, what, d.pos)
}

func (d *decoder) read(p []byte, what string) error {
	if int64(len(p)) > d.remaining() {
		return d.errTruncated(what)
	}
	n, err := io.ReadFull(d.r, p)
	d.pos += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return d.errTruncated(what)
		}
		return fmt.Errorf("reading %s at byte %d: %w", what, d.pos, err)
	}
	return nil
}

func (d *decoder) u8(what string) (uint8, error) {
	err := d.read(d.buf[:1], what)
	return d.buf[0], err
}

func (d *decoder) u16(what string) (uint16, error) {
	err := d.read(d.buf[:2], what)
	return binary.LittleEndian.Uint16(d.buf[:2]), err
}

func (d *decoder) u32(what string) (uint32, error) {
	err := d.read(d.buf[:4], what)
	return binary.LittleEndian.Uint32(d.buf[:4]), err
}

func (d *decoder) u64(what string) (uint64, error) {
	err := d.read(d.buf[:8], what)
	return binary.LittleEndian.Uint64(d.buf[:8]), err
}

// count reads a u64 count of items of at least minBytes bytes each and checks that they fit
// in what remains of the file.
func (d *decoder) count(what string, minBytes int) (int, error) {
	n, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	if minBytes < 1 {
		minBytes = 1
	}
	if n > uint64(d.remaining())/uint64(minBytes) {
		return 0, fmt.Errorf("%s is %d, but only %d bytes remain in the file (each item takes at least %d)",
			what, n, d.remaining(), minBytes)
	}
	return int(n), nil
}

// str reads a GGUF string: a u64 length, then the bytes.
func (d *decoder) str(what string) (string, error) {
	n, err := d.count("length of "+what, 1)
	if err != nil {
		return "", err
	}
	b := make([]byte, n)
	if err := d.read(b, what); err != nil {
		return "", err
	}
	return string(b), nil
}

// value reads one metadata value of type t.
func (d *decoder) value(t ValueType, what string, depth int) (Value, error) {
	v := Value{Type: t}
	var err error
	switch t {
	case TypeUint8:
		var x uint8
		x, err = d.u8(what)
		v.v = x
	case TypeInt8:
		var x uint8
		x, err = d.u8(what)
		v.v = int8(x)
	case TypeBool:
		var x uint8
		x, err = d.u8(what)
		if err == nil && x > 1 {
			return v, fmt.Errorf("%s: bool value %d is neither 0 nor 1", what, x)
		}
		v.v = x == 1
	case TypeUint16:
		var x uint16
		x, err = d.u16(what)
		v.v = x
	case TypeInt16:
		var x uint16
		x, err = d.u16(what)
		v.v = int16(x)
	case TypeUint32:
		var x uint32
		x, err = d.u32(what)
		v.v = x
	case TypeInt32:
		var x uint32
		x, err = d.u32(what)
		v.v = int32(x)
	case TypeFloat32:
		var x uint32
		x, err = d.u32(what)
		v.v = math.Float32frombits(x)
	case TypeUint64:
		var x uint64
		x, err = d.u64(what)
		v.v = x
	case TypeInt64:
		var x uint64
		x, err = d.u64(what)
		v.v = int64(x)
	case TypeFloat64:
		var x uint64
		x, err = d.u64(what)
		v.v = math.Float64frombits(x)
	case TypeString:
		v.v, err = d.str(what)
	case TypeArray:
		return d.array(what, depth)
	default:
		return v, fmt.Errorf("%s: unknown value type %d", what, uint32(t))
	}
	return v, err
}

// array reads an array value: element type, count, elements, into a typed slice.
func (d *decoder) array(what string, depth int) (Value, error) {
	v := Value{Type: TypeArray}
	if depth >= maxArrayDepth {
		return v, fmt.Errorf("%s: arrays nested deeper than %d", what, maxArrayDepth)
	}
	et, err := d.u32("element type of " + what)
	if err != nil {
		return v, err
	}
	v.Elem = ValueType(et)
	if v.Elem.minSize() == 0 {
		return v, fmt.Errorf("%s: unknown array element type %d", what, et)
	}
	n, err := d.count("element count of "+what, v.Elem.minSize())
	if err != nil {
		return v, err
	}
	elem := func(i int) string { return fmt.Sprintf("%s[%d]", what, i) }
	switch v.Elem {
	case TypeString:
		s := make([]string, n)
		for i := range s {
			if s[i], err = d.str(elem(i)); err != nil {
				return v, err
			}
		}
		v.v = s
	case TypeArray:
		s := make([]Value, n)
		for i := range s {
			if s[i], err = d.array(elem(i), depth+1); err != nil {
				return v, err
			}
		}
		v.v = s
	default:
		// Scalars: read the bytes at once (the count was checked against the file), then decode.
		sz := v.Elem.size()
		raw := make([]byte, n*sz)
		if err := d.read(raw, what); err != nil {
			return v, err
		}
		v.v, err = decodeScalars(v.Elem, raw, n, what)
		if err != nil {
			return v, err
		}
	}
	return v, nil
}

// decodeScalars turns n little-endian scalars of type t into a typed slice.
func decodeScalars(t ValueType, raw []byte, n int, what string) (any, error) {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return raw, nil
	case TypeInt8:
		s := make([]int8, n)
		for i := range s {
			s[i] = int8(raw[i])
		}
		return s, nil
	case TypeBool:
		s := make([]bool, n)
		for i := range s {
			if raw[i] > 1 {
				return nil, fmt.Errorf("%s[%d]: bool value %d is neither 0 nor 1", what, i, raw[i])
			}
			s[i] = raw[i] == 1
		}
		return s, nil
	case TypeUint16:
		s := make([]uint16, n)
		for i := range s {
			s[i] = le.Uint16(raw[2*i:])
		}
		return s, nil
	case TypeInt16:
		s := make([]int16, n)
		for i := range s {
			s[i] = int16(le.Uint16(raw[2*i:]))
		}
		return s, nil
	case TypeUint32:
		s := make([]uint32, n)
		for i := range s {
			s[i] = le.Uint32(raw[4*i:])
		}
		return s, nil
	case TypeInt32:
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(le.Uint32(raw[4*i:]))
		}
		return s, nil
	case TypeFloat32:
		s := make([]float32, n)
		for i := range s {
			s[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return s, nil
	case TypeUint64:
		s := make([]uint64, n)
		for i := range s {
			s[i] = le.Uint64(raw[8*i:])
		}
		return s, nil
	case TypeInt64:
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(le.Uint64(raw[8*i:]))
		}
		return s, nil
	case TypeFloat64:
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return s, nil
	}
	return nil, fmt.Errorf("%s: unknown array element type %d", what, uint32(t))
}
