package fastgo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// groupCase is one grouped weighted sum: out [batch, m, 64] = w [batch, m, k] · V [batch, k, 64],
// V's rows ldb apart (ldb ≥ 64: a cache chunk inside a wider tensor).
type groupCase struct{ batch, m, k, ldb int }

func (c groupCase) String() string {
	return fmt.Sprintf("b%d_m%d_k%d_ldb%d", c.batch, c.m, c.k, c.ldb)
}

// product is c as gemmCase (n = 64).
func (c groupCase) product() gemmCase { return gemmCase{c.batch, c.m, 64, c.k} }

// groupOperands returns the operands of c: w [batch, m, k] row-major and V [batch, k, ldb]
// (its first 64 columns), normal random values from seed, the output filled with NaN.
func groupOperands(c groupCase, seed uint64) (l, r operand[float32], out []float32) {
	rng := rand.New(rand.NewPCG(seed, 29))
	lhs := make([]float32, c.batch*c.m*c.k)
	for i := range lhs {
		lhs[i] = float32(rng.NormFloat64())
	}
	rhs := make([]float32, c.batch*c.k*c.ldb)
	for i := range rhs {
		rhs[i] = float32(rng.NormFloat64())
	}
	l = newOperand(lhs, []int{c.batch, c.m, c.k}, []int{2}, []int{0})
	r = newOperand(rhs, []int{c.batch, c.k, c.ldb}, []int{1}, []int{0}) // cross: the ldb columns …
	r.crossOff = r.crossOff[:64]                                        // … of which the first 64
	out = make([]float32, c.batch*c.m*64)
	for i := range out {
		out[i] = float32(math.NaN())
	}
	return l, r, out
}

// TestGroupRowsAgainstFloat64 checks groupRows — 2 … groupMaxRows weight rows (odd counts: a last single
// row; more than a task's 8), value rows not a multiple of a 64-row block, rows a stride apart,
// 1 and 3 workers — against a float64 reference with gemm's bound
// |got − exact| ≤ 2(k+1)·u·Σ|lhs·rhs|. Like the tests below, in each vector mode with
// groupRows' kernels (forGroupModes).
func TestGroupRowsAgainstFloat64(t *testing.T) {
	forGroupModes(t, testGroupRowsAgainstFloat64)
}

// forGroupModes runs f in every vector mode of the CPU in which groupRows has kernels (AVX-512,
// and AVX2+FMA — also on an AVX-512 CPU, with AVX-512 switched off), and skips t where there is
// none.
func forGroupModes(t *testing.T, f func(t *testing.T)) {
	ran := false
	for _, m := range vecModes() {
		p512, p2 := setVec(m.avx512, m.avx2)
		has := hasGroupRows()
		setVec(p512, p2)
		if !has {
			continue
		}
		ran = true
		t.Run(m.name, func(t *testing.T) {
			withVecMode(t, m)
			f(t)
		})
	}
	if !ran {
		t.Skip("no AVX-512 or AVX2+FMA kernels: groupRows declines every product")
	}
}

func testGroupRowsAgainstFloat64(t *testing.T) {
	var cases []groupCase
	for _, m := range []int{2, 3, 4, 5, 8, 9, 31, groupMaxRows} {
		for _, k := range []int{1, 5, 63, 64, 65, 200, 513} {
			cases = append(cases, groupCase{batch: 1 + k%3, m: m, k: k, ldb: 64 + 32*(k%2)})
		}
	}
	for ci, c := range cases {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%v/w%d", c, workers), func(t *testing.T) {
				l, r, out := groupOperands(c, uint64(ci))
				if !groupRows(l, r, out, c.batch, c.m, 64, c.k, workers) {
					t.Fatal("groupRows declined")
				}
				checkProduct(t, c.product(), l, r, out, 0x1p-24, "groupRows")
			})
		}
	}
}

// TestGroupRowsDeclines checks what groupRows leaves to gemv and the GEMM: one row, more than
// groupMaxRows rows, float64, transposed weights, other widths — in every vector mode (in plain
// Go it declines every product).
func TestGroupRowsDeclines(t *testing.T) {
	for _, m := range vecModes() {
		t.Run(m.name, func(t *testing.T) {
			withVecMode(t, m)
			testGroupRowsDeclines(t)
		})
	}
}

func testGroupRowsDeclines(t *testing.T) {
	l, r, out := groupOperands(groupCase{batch: 2, m: 4, k: 64, ldb: 64}, 1)
	for _, c := range []struct {
		name           string
		l, r           operand[float32]
		batch, m, n, k int
	}{
		{"one row", l, r, 2, 1, 64, 64},
		{"too many rows", newOperand(make([]float32, (groupMaxRows+1)*64), []int{1, groupMaxRows + 1, 64}, []int{2}, []int{0}), r, 1, groupMaxRows + 1, 64, 64},
		{"lhs transposed", newOperand(make([]float32, 2*4*64), []int{2, 64, 4}, []int{1}, []int{0}), r, 2, 4, 64, 64},
		{"scores, k 32", newOperand(make([]float32, 2*4*32), []int{2, 4, 32}, []int{2}, []int{0}),
			newOperand(make([]float32, 2*64*32), []int{2, 64, 32}, []int{2}, []int{0}), 2, 4, 64, 32},
		{"n 32", newOperand(make([]float32, 2*4*32), []int{2, 4, 32}, []int{2}, []int{0}),
			newOperand(make([]float32, 2*32*32), []int{2, 32, 32}, []int{1}, []int{0}), 2, 4, 32, 32},
	} {
		if groupRows(c.l, c.r, out, c.batch, c.m, c.n, c.k, 2) {
			t.Errorf("%s: groupRows took the product", c.name)
		}
	}
	l64 := newOperand(make([]float64, 2*4*64), []int{2, 4, 64}, []int{2}, []int{0})
	r64 := newOperand(make([]float64, 2*64*64), []int{2, 64, 64}, []int{2}, []int{0})
	if groupRows(l64, r64, make([]float64, 2*4*64), 2, 4, 64, 64, 2) {
		t.Error("float64: groupRows took the product")
	}
}

// TestGroupRowsNonFinite puts NaN, +Inf and −Inf into the query/weight rows and into the cache
// rows: every output whose float64 reference is NaN must be NaN, ±Inf the same infinity, and
// finite outputs within the bound (a kernel that skips a row, or starts a block from stale
// partial sums, fails here).
func TestGroupRowsNonFinite(t *testing.T) { forGroupModes(t, testGroupRowsNonFinite) }

func testGroupRowsNonFinite(t *testing.T) {
	for ci, c := range []groupCase{
		{batch: 1, m: 32, k: 200, ldb: 80},
		{batch: 2, m: 5, k: 130, ldb: 64},
	} {
		l, r, out := groupOperands(c, uint64(100+ci))
		l.flat[3] = float32(math.NaN())                 // row 0 of example 0
		l.flat[c.k+1] = float32(math.Inf(1))            // row 1
		l.flat[2*c.k+2] = float32(math.Inf(-1))         // row 2
		r.flat[5*c.ldb+7] = float32(math.Inf(1))        // value row 5, column 7
		r.flat[len(r.flat)-c.ldb] = float32(math.NaN()) // the last example's last cache row
		if !groupRows(l, r, out, c.batch, c.m, 64, c.k, 2) {
			t.Fatalf("%v: groupRows declined", c)
		}
		checkProduct(t, c.product(), l, r, out, 0x1p-24, "groupRows, non-finite operands")
	}
}

// TestGroupScoresAgainstFloat64 checks groupRows on the scores q [b, m, 64] · K [b, n, 64]ᵀ —
// 2 … groupMaxRows query rows, key counts not multiples of 4 or of a task's 64 keys, up to a whole cache
// of 4096 (more than gemv takes), key rows a stride apart, 1 and 3 workers — against a float64
// reference with gemm's bound.
func TestGroupScoresAgainstFloat64(t *testing.T) {
	forGroupModes(t, testGroupScoresAgainstFloat64)
}

func testGroupScoresAgainstFloat64(t *testing.T) {
	ci := 0
	for _, m := range []int{2, 3, 5, 17, groupMaxRows} {
		for _, n := range []int{2, 3, 5, 63, 64, 65, 300, 4096} {
			ci++
			c := gemmCase{batch: 1 + (m+n)%3, m: m, n: n, k: 64}
			ldb := 64 + 16*(n%2)
			for _, workers := range []int{1, 3} {
				t.Run(fmt.Sprintf("b%d_m%d_n%d_ldb%d/w%d", c.batch, m, n, ldb, workers), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(ci), 31))
					q := make([]float32, c.batch*m*64)
					keys := make([]float32, c.batch*n*ldb)
					for _, x := range [][]float32{q, keys} {
						for i := range x {
							x[i] = float32(rng.NormFloat64())
						}
					}
					l := newOperand(q, []int{c.batch, m, 64}, []int{2}, []int{0})
					r := newOperand(keys, []int{c.batch, n, ldb}, []int{2}, []int{0})
					r.contractOff = r.contractOff[:64]
					out := make([]float32, c.batch*m*n)
					for i := range out {
						out[i] = float32(math.NaN())
					}
					if !groupRows(l, r, out, c.batch, m, n, 64, workers) {
						t.Fatal("groupRows declined")
					}
					checkProduct(t, c, l, r, out, 0x1p-24, "groupRows scores")
				})
			}
		}
	}
}
