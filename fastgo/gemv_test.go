package fastgo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGEMVAgainstFloat64 checks gemv, for every layout of both operands, with 1 … gemvMaxRows
// rows and 1 or 3 workers, against a float64 reference with gemm's error bound: |got − exact| ≤
// 2(k+1)·u·Σ|lhs·rhs|. It takes the product exactly when B is contiguous along its contracting
// axis (dot form) or its cross axis (axpy form), and never with more than gemvMaxRows rows.
// The case m > 1, n = 1 goes through the operand swap that run uses.
func TestGEMVAgainstFloat64(t *testing.T) {
	cases := []gemmCase{{1, 1, 1, 1}, {1, 1, 7, 3}, {3, 2, 33, 17}, {1, 1, 1030, 100}, {2, 5, 513, 64},
		{1, 8, 40, 2049}, {4, 4, 65, 256}, {1, 9, 16, 16}, {2, 7, 1, 33}}
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
	rng := rand.New(rand.NewPCG(seed, 19))
	lDims, rDims := ll.dims(c.batch, c.m, c.k), rl.dims(c.batch, c.n, c.k)
	lhs, rhs := make([]T, prod(lDims)), make([]T, prod(rDims))
	for i := range lhs {
		lhs[i] = T(rng.NormFloat64())
	}
	for i := range rhs {
		rhs[i] = T(rng.NormFloat64())
	}
	l := newOperand(lhs, lDims, ll.contract, ll.batchAx)
	r := newOperand(rhs, rDims, rl.contract, rl.batchAx)
	out := make([]T, c.batch*c.m*c.n)
	for i := range out {
		out[i] = T(math.NaN()) // gemv must overwrite every element
	}
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
	want := c.m <= gemvMaxRows || swapped
	if want && !bOp.contiguous && !(bRows == 1 || contiguousRows(bOp)) {
		want = false
	}
	if did != want {
		t.Fatalf("gemv took the product: %v, want %v", did, want)
	}
	if !did {
		return
	}
	bound := 2 * float64(c.k+1) * unit
	for b := range c.batch {
		for i := range c.m {
			for j := range c.n {
				var exact, mag float64
				for k := range c.k {
					x := float64(lhs[l.batchOff[b]+l.crossOff[i]+l.contractOff[k]])
					y := float64(rhs[r.batchOff[b]+r.crossOff[j]+r.contractOff[k]])
					exact += x * y
					mag += math.Abs(x * y)
				}
				got := float64(out[(b*c.m+i)*c.n+j])
				if !(math.Abs(got-exact) <= bound*mag) {
					t.Fatalf("out[%d,%d,%d] = %g, want %g (error %.3g > bound %.3g)", b, i, j, got, exact, math.Abs(got-exact), bound*mag)
				}
			}
		}
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
