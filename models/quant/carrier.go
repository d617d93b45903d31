package quant

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/models/gguf"
)

// Matrix is a packed matrix [Rows, Cols], row-major, in GGUF blocks of 32 along a row: Q8_0
// (34 bytes a block: f16 d, 32 int8) or Q4_1 (20 bytes: f16 d, f16 m, 16 bytes of nibbles).
type Matrix struct {
	Format     gguf.TensorType
	Rows, Cols int
	Data       []byte // Rows · Cols/32 blocks
}

// Packable reports whether t is a format this package keeps packed.
func Packable(t gguf.TensorType) bool { return t == gguf.TensorQ8_0 || t == gguf.TensorQ4_1 }

// NewMatrix checks data against the format and shape.
func NewMatrix(t gguf.TensorType, rows, cols int, data []byte) (*Matrix, error) {
	if !Packable(t) {
		return nil, fmt.Errorf("quant: format %s is not packed here (Q8_0 and Q4_1 are)", t)
	}
	if rows <= 0 || cols <= 0 || cols%32 != 0 {
		return nil, fmt.Errorf("quant: %s matrix [%d, %d]: want positive sizes and columns a multiple of 32", t, rows, cols)
	}
	if want := rows * cols / 32 * t.BlockBytes(); len(data) != want {
		return nil, fmt.Errorf("quant: %s matrix [%d, %d]: %d bytes, want %d", t, rows, cols, len(data), want)
	}
	scales := 1 // f16 numbers at the start of a block: d (Q8_0); d, m (Q4_1)
	if t == gguf.TensorQ4_1 {
		scales = 2
	}
	for b := 0; b < len(data); b += t.BlockBytes() {
		for s := range scales {
			if h := binary.LittleEndian.Uint16(data[b+2*s:]); h&0x7c00 == 0x7c00 {
				return nil, fmt.Errorf("quant: %s matrix [%d, %d]: block %d has an infinite or NaN scale (%#04x)", t, rows, cols, b/t.BlockBytes(), h)
			}
		}
	}
	return &Matrix{Format: t, Rows: rows, Cols: cols, Data: data}, nil
}

// RowBytes is the size of one packed row.
func (m *Matrix) RowBytes() int { return m.Cols / 32 * m.Format.BlockBytes() }

// Row returns row r's blocks.
func (m *Matrix) Row(r int) []byte { return m.Data[r*m.RowBytes() : (r+1)*m.RowBytes()] }

// PermuteRows returns the matrix with rows reordered: new row i is old row from[i].
func (m *Matrix) PermuteRows(from []int) *Matrix {
	out := &Matrix{Format: m.Format, Rows: m.Rows, Cols: m.Cols, Data: make([]byte, len(m.Data))}
	rb := m.RowBytes()
	for i, f := range from {
		copy(out.Data[i*rb:(i+1)*rb], m.Row(f))
	}
	return out
}

// Dequantise returns the matrix as float32 [Rows·Cols], row-major (gguf.Dequantise).
func (m *Matrix) Dequantise() []float32 {
	out := make([]float32, m.Rows*m.Cols)
	if err := gguf.Dequantise(m.Format, m.Data, out); err != nil {
		panic(err) // NewMatrix checked the sizes
	}
	return out
}

// The carrier's header: headerWords uint32 words before the blocks.
const (
	magic0      = 0x514e5431 // "QNT1"
	magic1      = 0x6c61686d // "mhal"
	headerWords = 8
)

// CarrierShape is the float32 carrier's shape [Bt, C, N] for a rows × cols matrix of format t:
// Bt divides both rows and cols (C = cols/Bt, N = rows/Bt) and is the largest such number
// for which the Bt·C·N = rows·cols/Bt words hold the header and the blocks.
func CarrierShape(t gguf.TensorType, rows, cols int) ([3]int, error) {
	need := headerWords + (rows*cols/32*t.BlockBytes()+3)/4
	for bt := min(rows, cols); bt >= 1; bt-- {
		if rows%bt == 0 && cols%bt == 0 && rows*cols/bt >= need {
			return [3]int{bt, cols / bt, rows / bt}, nil
		}
	}
	return [3]int{}, fmt.Errorf("quant: no carrier for a %s matrix [%d, %d]", t, rows, cols)
}

// Carrier returns the matrix as a float32 carrier (flat, of CarrierShape's size): the header
// words, then the rows in the layout SetLayout chose (Planar's, or Lanes8's), then zeros.
func (m *Matrix) Carrier() ([]float32, [3]int, error) {
	shape, err := CarrierShape(m.Format, m.Rows, m.Cols)
	if err != nil {
		return nil, shape, err
	}
	words := make([]float32, shape[0]*shape[1]*shape[2])
	b := carrierBytes(words)
	h := Header{Format: m.Format, Rows: m.Rows, Cols: m.Cols, Bt: shape[0], Layout: CurrentLayout()}
	h.put(b)
	rb := m.RowBytes()
	write := Planar
	if h.Layout == LayoutLanes8 {
		write = Lanes8
	}
	for r := range m.Rows {
		write(m.Format, m.Row(r), b[4*headerWords+r*rb:4*headerWords+(r+1)*rb])
	}
	return words, shape, nil
}

// Planar writes one row of GGUF blocks (nb of them) into dst in the carrier's planar layout,
// the same bytes regrouped so that a kernel converts 16 scales with a few vector operations
// and then reads only quants in its inner loop:
//
//	Q8_0: d f16 × nb, then the quants int8 × 32·nb
//	Q4_1: d f16 × nb, m f16 × nb, then the nibbles 16 bytes × nb (each block's as in GGUF)
func Planar(t gguf.TensorType, row, dst []byte) {
	bb := t.BlockBytes()
	nb := len(row) / bb
	switch t {
	case gguf.TensorQ8_0:
		for b := range nb {
			copy(dst[2*b:2*b+2], row[b*bb:])
			copy(dst[2*nb+32*b:2*nb+32*b+32], row[b*bb+2:b*bb+34])
		}
	case gguf.TensorQ4_1:
		for b := range nb {
			copy(dst[2*b:2*b+2], row[b*bb:])
			copy(dst[2*nb+2*b:2*nb+2*b+2], row[b*bb+2:])
			copy(dst[4*nb+16*b:4*nb+16*b+16], row[b*bb+4:b*bb+20])
		}
	}
}

// Header is what a carrier says about its matrix.
type Header struct {
	Format     gguf.TensorType
	Rows, Cols int
	Bt         int    // the carrier's first axis
	Layout     Layout // the rows' layout (LayoutPlanar, LayoutLanes8)
}

func (h Header) words() [headerWords]uint32 {
	w := [headerWords]uint32{magic0, magic1, uint32(h.Format), uint32(h.Rows), uint32(h.Cols), uint32(h.Bt), 0, uint32(h.Layout)}
	w[6] = w[0] ^ w[1] ^ w[2] ^ w[3]*31 ^ w[4]*131 ^ w[5]*521 ^ w[7]*1031 ^ 0xa5a5a5a5
	return w
}

func (h Header) put(b []byte) {
	for i, w := range h.words() {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
}

// ReadCarrier checks that words [bt, c, n] (row-major) is a carrier with that shape and
// returns its header and rows (in the layout h.Layout names); ok is false for any other float32 tensor. A random tensor
// passes only if its first 7 words equal the magic, a consistent shape and the checksum.
func ReadCarrier(words []float32, bt, c, n int) (h Header, blocks []byte, ok bool) {
	if len(words) < headerWords || len(words) != bt*c*n {
		return h, nil, false
	}
	b := carrierBytes(words)
	le := binary.LittleEndian
	if le.Uint32(b) != magic0 || le.Uint32(b[4:]) != magic1 {
		return h, nil, false
	}
	h = Header{Format: gguf.TensorType(le.Uint32(b[8:])), Rows: int(le.Uint32(b[12:])), Cols: int(le.Uint32(b[16:])), Bt: int(le.Uint32(b[20:])),
		Layout: Layout(le.Uint32(b[28:]))}
	if !Packable(h.Format) || h.Layout > LayoutLanes8 || h.words()[6] != le.Uint32(b[24:]) || h.Bt != bt || h.Cols != bt*c || h.Rows != bt*n || h.Cols%32 != 0 {
		return h, nil, false
	}
	size := h.Rows * h.Cols / 32 * h.Format.BlockBytes()
	if 4*headerWords+size > len(b) {
		return h, nil, false
	}
	return h, b[4*headerWords : 4*headerWords+size], true
}

// carrierBytes views float32 words as their bytes (little-endian machines: amd64, arm64).
func carrierBytes(words []float32) []byte {
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 4*len(words))
}

// executor is set by the package that computes carriers' products (fastgo, on the pure-Go
// backend): it reports whether that executor is installed and switched on for a backend now.
var executor atomic.Pointer[func(backends.Backend) bool]

// SetExecutor registers the function that says whether a backend's DotGeneral computes
// carriers (fastgo calls it when it installs itself).
func SetExecutor(available func(backends.Backend) bool) { executor.Store(&available) }

// Available reports whether a graph built with Dot runs correctly on backend.
func Available(backend backends.Backend) bool {
	f := executor.Load()
	return f != nil && backend != nil && (*f)(backend)
}
