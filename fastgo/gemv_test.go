package fastgo

import (
	"fmt"
	"runtime"
	"testing"
)

// TestGEMVAgainstFloat64 checks gemv, for every layout of both operands, with 1 … 33 rows and 1
// or 3 workers, against a float64 reference with gemm's error bound: |got − exact| ≤
// 2(k+1)·u·Σ|lhs·rhs|. It takes the product exactly when B is contiguous along its contracting
// axis (dot form) or its cross axis (axpy form), and never with more than gemvMaxRows rows —
// but for the dot form with a small B and the 4×4 vector kernel, up to gemvDotMaxRows. The
// axpy form's 64-column kernel runs for n = 64 with up to 8 rows.
// The case m > 1, n = 1 goes through the operand swap that run uses. With fewer than 4 rows in
// the dot form, strided B rows stream through dotRows (k = 64: its register kernel), and long
// rows go four at a time through dot4 (dot4Long). It runs in
// every vector mode of the CPU (gemv_vec_test.go): AVX-512, AVX2+FMA (on an AVX-512 CPU with
// AVX-512 switched off) and plain Go.
func TestGEMVAgainstFloat64(t *testing.T) {
	for _, m := range vecModes() {
		t.Run(m.name, func(t *testing.T) {
			withVecMode(t, m)
			testGEMVAgainstFloat64(t)
		})
	}
}

func testGEMVAgainstFloat64(t *testing.T) {
	cases := []gemmCase{{1, 1, 1, 1}, {1, 1, 7, 3}, {3, 2, 33, 17}, {1, 1, 1030, 100}, {2, 5, 513, 64},
		{1, 8, 40, 2049}, {4, 4, 65, 256}, {1, 9, 16, 16}, {2, 7, 1, 33},
		{1, 32, 256, 64}, {2, 13, 37, 19}, {1, 17, 6, 70}, {1, 12, 300, 300}, {1, 33, 8, 8},
		{1, 32, 64, 256}, {2, 4, 64, 100}, {1, 1, 64, 3}, {1, 8, 64, 1100}, {3, 6, 64, 17},
		{2, 1, 301, 64}, {1, 3, 70, 64}, {1, 2, 9, 100}, // these three: dotRows (m < 4, rows a stride apart)
		// Long rows (k > dot4MaxK) with fewer than 4 rows of A: four B rows at a time
		// (dot4Long), tails of B rows and of k; few columns: tiles narrowed for the workers.
		{1, 1, 67, 300}, {2, 3, 13, 521}, {1, 2, 5, 1031}, {1, 1, 64, 2048}, {1, 1, 12, 777}, {3, 1, 4, 260},
		// One row per example, two examples per task (gemvpair.go): q·Kᵀ over 64 features, weights·V
		// over 64 columns, an odd example last, a tile tail under 4 rows.
		{6, 1, 256, 64}, {5, 1, 64, 256}, {3, 1, 70, 64}, {4, 1, 64, 1}, {2, 1, 3, 64}, {7, 1, 130, 64}}
	for ci, c := range cases {
		for li, ll := range layouts {
			for ri, rl := range layouts {
				for _, workers := range []int{1, 3} {
					name := fmt.Sprintf("b%d_m%d_n%d_k%d/lhs%s_rhs%s/w%d", c.batch, c.m, c.n, c.k, ll.name, rl.name, workers)
					seed := uint64(ci*1000 + li*100 + ri*10 + workers)
					t.Run(name+"/f32", func(t *testing.T) { checkGEMV[float32](t, c, ll, rl, workers, seed, 0x1p-24) })
					t.Run(name+"/f64", func(t *testing.T) { checkGEMV[float64](t, c, ll, rl, workers, seed, 0x1p-53) })
				}
			}
		}
	}
}

func checkGEMV[T Float](t *testing.T, c gemmCase, ll, rl layout, workers int, seed uint64, unit float64) {
	l, r, out := randProduct[T](c, ll, rl, seed, 19)
	var did bool
	swapped := c.m > gemvMaxRows && c.n == 1
	if swapped {
		did = gemv(r, l, out, c.batch, 1, c.m, c.k, workers) // [b, 1, m] = [b, m, 1]
	} else {
		did = gemv(l, r, out, c.batch, c.m, c.n, c.k, workers)
	}
	// B as gemv reads it: rhs, or lhs when swapped; contiguous along k or along its rows.
	bOp, bRows := r, c.n
	if swapped {
		bOp, bRows = l, c.m
	}
	crossContiguous := bRows == 1 || contiguousRows(bOp)
	want := c.m <= gemvMaxRows || swapped ||
		c.m <= gemvDotMaxRows && bOp.contiguous && !crossContiguous && c.n*c.k <= gemvDotMaxB && hasDot4x4[T]()
	if want && !bOp.contiguous && !crossContiguous {
		want = false
	}
	if did != want {
		t.Fatalf("gemv took the product: %v, want %v", did, want)
	}
	if did {
		checkProduct(t, c, l, r, out, unit, "gemv")
	}
}

// contiguousRows reports whether op's rows (its cross axis) are contiguous.
func contiguousRows[T Float](op operand[T]) bool {
	for j, off := range op.crossOff {
		if off != op.crossOff[0]+j {
			return false
		}
	}
	return true
}

// TestGEMVDotStridedRows checks the dot form with A's rows contiguous but a constant stride
// apart, as all-MiniLM-L6-v2's q [B, L, h, dk] gives them (here [rows, b, k]: rows b·k apart),
// against the float64 reference in every vector mode; and that gemv reads them where they lie:
// it allocates less than the b·m·k values a gather would take (it allocated them all before),
// checked where they are 16 KB or more.
func TestGEMVDotStridedRows(t *testing.T) {
	rowsBK := layout{"[rows,b,k]", func(b, r, k int) []int { return []int{r, b, k} }, []int{2}, []int{1}}
	for _, mode := range vecModes() {
		t.Run(mode.name, func(t *testing.T) {
			withVecMode(t, mode)
			for ci, c := range []gemmCase{{12, 14, 14, 32}, {3, 2, 9, 100}, {4, 5, 33, 64}, {2, 32, 64, 256}, {5, 7, 1, 17}} {
				for ri, rl := range layouts {
					for _, workers := range []int{1, 3} {
						name := fmt.Sprintf("b%d_m%d_n%d_k%d/rhs%s/w%d", c.batch, c.m, c.n, c.k, rl.name, workers)
						t.Run(name, func(t *testing.T) {
							l, r, out := randProduct[float32](c, rowsBK, rl, uint64(ci*100+ri*10+workers), 23)
							if l.crossStride != c.batch*c.k || !l.contiguous {
								t.Fatalf("lhs: crossStride %d, contiguous %v; want %d, true", l.crossStride, l.contiguous, c.batch*c.k)
							}
							var before, after runtime.MemStats
							runtime.ReadMemStats(&before)
							did := gemv(l, r, out, c.batch, c.m, c.n, c.k, workers)
							runtime.ReadMemStats(&after)
							if !did {
								if dotForm := r.contiguous && !contiguousRows(r); dotForm && hasDot4x4[float32]() {
									t.Fatal("gemv did not take a dot-form product")
								}
								return
							}
							checkProduct(t, c, l, r, out, 0x1p-24, "gemv")
							if dotForm := !contiguousRows(r) && c.n > 1; dotForm && c.batch*c.m*c.k >= 4096 { // (its own ~1 KB: well below)
								if got, gather := after.TotalAlloc-before.TotalAlloc, uint64(4*c.batch*c.m*c.k); got >= gather {
									t.Errorf("gemv allocated %d bytes, a gather's %d or more", got, gather)
								}
							}
						})
					}
				}
			}
		})
	}
}
