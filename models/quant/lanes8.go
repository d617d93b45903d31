package quant

import (
	"fmt"
	"sync/atomic"

	"github.com/mhalab/mhalab/models/gguf"
)

// Layout is the order of a carrier's bytes within each row (Header.Layout). Every layout holds
// the same bytes as the GGUF row, regrouped; the executor reads the layout the header names.
type Layout uint32

const (
	// LayoutPlanar: Planar's rows (the scales first, then each block's quants as in GGUF).
	LayoutPlanar Layout = 0
	// LayoutLanes8: Lanes8's rows (Planar's, with the quants of each whole group of 8 blocks
	// interleaved two bytes at a time), for kernels whose vector lanes each hold one block.
	LayoutLanes8 Layout = 1
)

// layout is the layout Carrier writes: the one the registered executor's kernels read best
// (SetLayout); planar until one says otherwise.
var layout atomic.Uint32

// SetLayout chooses the layout of the carriers built from now on (fastgo calls it when it
// installs itself; its executor reads every layout, whichever a carrier holds).
func SetLayout(l Layout) {
	if l != LayoutPlanar && l != LayoutLanes8 {
		panic(fmt.Errorf("quant: unknown layout %d", l))
	}
	layout.Store(uint32(l))
}

// CurrentLayout is the layout Carrier writes now.
func CurrentLayout() Layout { return Layout(layout.Load()) }

// Lanes8 writes one row of GGUF blocks (nb of them) into dst in the lanes-of-8 layout: Planar's
// layout, except that the quants of each group of 8 whole blocks g … g+7 (their 128 bytes of
// Q4_1 nibbles, or 256 Q8_0 int8) are interleaved two bytes at a time,
//
//	byte 16·s + 2·i + k of the group = byte 2·s + k of block g+i's quants   (i < 8, k < 2)
//
// so that 16 consecutive bytes, widened to 16-bit lanes, give each 32-bit lane of a pair sum
// (VPMADDWD) one block: a kernel accumulates 8 blocks' integer sums in one vector, without a
// conversion and a broadcast scale per block. The last t = nb mod 8 blocks f … f+t−1 are
// interleaved the same way with t in place of 8 when t divides 8 (byte 2t·s + 2i + k = byte
// 2s + k of block f+i: lane j of a pair sum then holds block f + j mod t), and stay as in
// Planar when t is 3, 5, 6 or 7.
func Lanes8(t gguf.TensorType, row, dst []byte) {
	Planar(t, row, dst)
	bb := t.BlockBytes()
	nb := len(row) / bb
	q, start := quantBytes(bb, nb)
	var tmp [256]byte
	for g := 0; g < nb; g += 8 {
		n := groupBlocks(g, nb)
		if n == 0 {
			break
		}
		group := dst[start+q*g : start+q*(g+n)]
		copy(tmp[:], group)
		for s := range q / 2 {
			for i := range n {
				group[2*n*s+2*i], group[2*n*s+2*i+1] = tmp[q*i+2*s], tmp[q*i+2*s+1]
			}
		}
	}
}

// Unlanes8 undoes Lanes8: dst receives the row of format t (Lanes8's layout) in Planar's.
func Unlanes8(t gguf.TensorType, row, dst []byte) {
	bb := t.BlockBytes()
	nb := len(row) / bb
	q, start := quantBytes(bb, nb)
	copy(dst, row[:bb*nb])
	for g := 0; g < nb; g += 8 {
		n := groupBlocks(g, nb)
		if n == 0 {
			break
		}
		src, group := row[start+q*g:start+q*(g+n)], dst[start+q*g:start+q*(g+n)]
		for s := range q / 2 {
			for i := range n {
				group[q*i+2*s], group[q*i+2*s+1] = src[2*n*s+2*i], src[2*n*s+2*i+1]
			}
		}
	}
}

// groupBlocks is how many blocks Lanes8 interleaves from block g of a row of nb: 8 for a whole
// group, the t = nb − g < 8 last ones when t divides 8, else none (they stay planar).
func groupBlocks(g, nb int) int {
	switch t := nb - g; {
	case t >= 8:
		return 8
	case t == 1 || t == 2 || t == 4:
		return t
	}
	return 0
}

// quantBytes: a block's quant bytes (16 for Q4_1's 20-byte blocks, 32 for Q8_0's 34) and where
// a planar row of nb blocks has its quants (after the scales).
func quantBytes(bb, nb int) (q, start int) {
	q = 32
	if bb == 20 {
		q = 16
	}
	return q, (bb - q) * nb
}
