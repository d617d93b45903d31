package quant

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"

	"github.com/mhalab/mhalab/models/gguf"
)

// q4Block is one Q4_1 block: scales d and m (halves) and 16 bytes of nibbles.
func q4Block(d, m uint16, q byte) []byte {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint16(b, d)
	binary.LittleEndian.PutUint16(b[2:], m)
	for i := 4; i < 20; i++ {
		b[i] = q
	}
	return b
}

// TestNewMatrixRejects: a wrong size, shape or format, or an Inf/NaN scale, is an error that
// names it.
func TestNewMatrixRejects(t *testing.T) {
	good := q4Block(0x3c00, 0xbc00, 0x21) // d 1, m −1
	for _, c := range []struct {
		name string
		t    gguf.TensorType
		rows int
		cols int
		data []byte
		want string
	}{
		{"format", gguf.TensorF32, 1, 32, good, "not packed"},
		{"cols", gguf.TensorQ4_1, 1, 31, good, "multiple of 32"},
		{"size", gguf.TensorQ4_1, 2, 32, good, "20 bytes, want 40"},
		{"inf", gguf.TensorQ4_1, 1, 32, q4Block(0x7c00, 0, 0), "infinite or NaN scale"},
		{"nan m", gguf.TensorQ4_1, 1, 32, q4Block(0x3c00, 0x7e00, 0), "infinite or NaN scale"},
	} {
		_, err := NewMatrix(c.t, c.rows, c.cols, c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := NewMatrix(gguf.TensorQ4_1, 1, 32, good); err != nil {
		t.Fatal(err)
	}
}

// TestCarrierRoundTrip: a carrier holds its header and the rows in the planar layout; its shape
// [Bt, C, N] has Bt·C = cols, Bt·N = rows and room for the blocks; MatVec computes d·q + m.
func TestCarrierRoundTrip(t *testing.T) {
	var data []byte
	for r := range 6 {
		for b := range 3 {
			data = append(data, q4Block(0x3c00+uint16(r), 0xbc00, byte(16*b+r))...)
		}
	}
	m, err := NewMatrix(gguf.TensorQ4_1, 6, 96, data)
	if err != nil {
		t.Fatal(err)
	}
	words, shape, err := m.Carrier()
	if err != nil {
		t.Fatal(err)
	}
	if shape[0]*shape[1] != 96 || shape[0]*shape[2] != 6 || len(words) != shape[0]*shape[1]*shape[2] {
		t.Fatalf("carrier shape %v for [6, 96] (%d words)", shape, len(words))
	}
	h, rows, ok := ReadCarrier(words, shape[0], shape[1], shape[2])
	if !ok || h.Rows != 6 || h.Cols != 96 || h.Format != gguf.TensorQ4_1 || len(rows) != len(data) {
		t.Fatalf("ReadCarrier: %+v, %d bytes, ok %v", h, len(rows), ok)
	}
	// Row 1, planar: 3 d's, 3 m's, then 3 × 16 nibble bytes.
	row := rows[60:120]
	if binary.LittleEndian.Uint16(row[2:]) != 0x3c01 || binary.LittleEndian.Uint16(row[6:]) != 0xbc00 || row[12] != 1 || row[12+16] != 17 {
		t.Fatalf("planar row 1: % x", row)
	}
	x := make([]float32, 96)
	x[0], x[16] = 1, 1 // row r, block 0: low nibble r, high nibble 0
	y := m.MatVec(x, 1)
	for r := range 6 {
		d := 1 + float64(r)/1024 // 0x3c00 + r
		if want := (d*float64(r) - 1) + (d*0 - 1); math.Abs(float64(y[r])-want) > 1e-6 {
			t.Errorf("MatVec row %d = %g, want %g", r, y[r], want)
		}
	}
}

// TestAvailableWithoutExecutor: with no executor registered (this test binary imports no
// fastgo), no backend computes carriers.
func TestAvailableWithoutExecutor(t *testing.T) {
	var b backends.Backend
	if Available(b) {
		t.Fatal("Available with no executor registered")
	}
}
