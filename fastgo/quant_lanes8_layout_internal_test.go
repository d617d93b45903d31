//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestLanes8LayoutTransposes: lanes8Layout's transposes put every value where the single moves
// of lanes8GroupsGo put it, for Q4_1 and Q8_0 and 1–7 whole groups of 8 blocks plus tails of
// 0–7 blocks; int16 values from the whole range (the transposes move bits, and a pair may read
// as a float32 NaN or subnormal).
func TestLanes8LayoutTransposes(t *testing.T) {
	if !vecAVX2 {
		t.Skip("no AVX2: lanes8Layout does not run here")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 9))
	for _, q4 := range []bool{true, false} {
		for groups := 1; groups <= 7; groups++ {
			for tail := range 8 {
				nb := 8*groups + tail
				a := &qAct{nb: nb, q: make([]int16, 32*nb), d: make([]float32, nb), s: make([]float32, nb)}
				for i := range a.q {
					a.q[i] = int16(rng.Uint32())
				}
				a.q[0], a.q[1] = -1, 0x7f80 // pair bits 0x7f80ffff: a float32 NaN
				lanes8Layout(q4, a)
				full := nb &^ 7
				want := make([]uint32, 16*full)
				q := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(a.q))), 16*full)
				lanes8GroupsGo(q4, q, want)
				got := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(a.lay))), 16*full)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("q4 %v, %d blocks: pair %d is %#x, want %#x", q4, nb, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkLanes8Layout: x's layout for a Q4_1 product of 1536 columns (48 blocks), the
// transposes (lanes8Layout, with its scales) against the single moves (lanes8GroupsGo alone).
func BenchmarkLanes8Layout(b *testing.B) {
	if !vecAVX2 {
		b.Skip("no AVX2")
	}
	const nb = 48
	a := &qAct{nb: nb, q: make([]int16, 32*nb), d: make([]float32, nb), s: make([]float32, nb)}
	a.lay = make([]int16, 32*nb)
	q := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(a.q))), 16*nb)
	lay := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(a.lay))), 16*nb)
	b.Run("transposes", func(b *testing.B) {
		for b.Loop() {
			lanes8Layout(true, a)
		}
	})
	b.Run("moves", func(b *testing.B) {
		for b.Loop() {
			lanes8GroupsGo(true, q, lay)
		}
	})
}
