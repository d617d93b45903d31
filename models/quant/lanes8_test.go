package quant

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/mhalab/mhalab/models/gguf"
)

// TestLanes8: Lanes8 keeps Planar's scales, moves byte 2s+k of block g+i of each whole group of
// 8 to 16s+2i+k, and of a tail of t = 1, 2 or 4 blocks to 2ts+2i+k (other tails stay planar),
// and Unlanes8 gives Planar's row back, for rows of 1 … 19 blocks.
func TestLanes8(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range []gguf.TensorType{gguf.TensorQ4_1, gguf.TensorQ8_0} {
		bb := f.BlockBytes()
		q, _ := quantBytes(bb, 0)
		for nb := 1; nb <= 19; nb++ {
			row := make([]byte, bb*nb)
			for i := range row {
				row[i] = byte(rng.IntN(256))
			}
			planar, lanes, back := make([]byte, len(row)), make([]byte, len(row)), make([]byte, len(row))
			Planar(f, row, planar)
			Lanes8(f, row, lanes)
			start := (bb - q) * nb
			if !bytes.Equal(lanes[:start], planar[:start]) {
				t.Fatalf("%s, %d blocks: scales moved", f, nb)
			}
			full, tail := nb&^7, nb%8
			for b := range nb {
				for j := range q {
					want := planar[start+q*b+j]
					at := start + q*b + j // a tail of 3, 5, 6 or 7 blocks: as in Planar
					s, k := j/2, j%2
					switch {
					case b < full:
						at = start + q*(b&^7) + 16*s + 2*(b%8) + k
					case tail == 1 || tail == 2 || tail == 4:
						at = start + q*full + 2*tail*s + 2*(b-full) + k
					}
					if lanes[at] != want {
						t.Fatalf("%s, %d blocks: block %d byte %d at %d is %#x, want %#x", f, nb, b, j, at, lanes[at], want)
					}
				}
			}
			Unlanes8(f, lanes, back)
			if !bytes.Equal(back, planar) {
				t.Fatalf("%s, %d blocks: Unlanes8 does not give the planar row back", f, nb)
			}
		}
	}
}

// TestCarrierLayout: a carrier records the layout SetLayout chose and holds its rows in it; a
// header claiming an unknown layout is no carrier.
func TestCarrierLayout(t *testing.T) {
	defer SetLayout(CurrentLayout())
	data := make([]byte, 0, 2*9*20)
	for r := range 2 {
		for b := range 9 {
			data = append(data, q4Block(0x3c00, 0xbc00, byte(16*b+r))...)
		}
	}
	m, err := NewMatrix(gguf.TensorQ4_1, 2, 288, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []Layout{LayoutPlanar, LayoutLanes8} {
		SetLayout(l)
		words, shape, err := m.Carrier()
		if err != nil {
			t.Fatal(err)
		}
		h, rows, ok := ReadCarrier(words, shape[0], shape[1], shape[2])
		if !ok || h.Layout != l {
			t.Fatalf("layout %d: ReadCarrier %+v, ok %v", l, h, ok)
		}
		want := make([]byte, m.RowBytes())
		for r := range 2 {
			if l == LayoutPlanar {
				Planar(m.Format, m.Row(r), want)
			} else {
				Lanes8(m.Format, m.Row(r), want)
			}
			if !bytes.Equal(rows[r*m.RowBytes():(r+1)*m.RowBytes()], want) {
				t.Fatalf("layout %d: row %d differs", l, r)
			}
		}
		bad := append([]float32(nil), words...)
		b := carrierBytes(bad)
		b[28] = 7 // layout 7, checksum recomputed: still refused
		h.Layout = 7
		h.put(b)
		if _, _, ok := ReadCarrier(bad, shape[0], shape[1], shape[2]); ok {
			t.Fatalf("a carrier with layout 7 was accepted")
		}
	}
}
