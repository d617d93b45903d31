package fastgo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// layout is how one operand is stored: its dims and which axes are contracting / batch.
type layout struct {
	name              string
	dims              func(b, rows, k int) []int
	contract, batchAx []int
}

var layouts = []layout{
	{"[b,rows,k]", func(b, r, k int) []int { return []int{b, r, k} }, []int{2}, []int{0}},
	{"[b,k,rows]", func(b, r, k int) []int { return []int{b, k, r} }, []int{1}, []int{0}},
	{"[k,b,rows]", func(b, r, k int) []int { return []int{k, b, r} }, []int{0}, []int{1}},
	{"[rows,k,b]", func(b, r, k int) []int { return []int{r, k, b} }, []int{1}, []int{2}},
}

// gemmCase: out[batch, m, n] = Σ_k lhs · rhs.
type gemmCase struct{ batch, m, n, k int }

var gemmCases = []gemmCase{
	{1, 1, 1, 1}, {1, 1, 7, 3}, {1, 5, 1, 9}, {2, 7, 13, 5}, {1, 8, 32, 16}, {3, 9, 33, 17},
	{1, 33, 65, 257}, {2, 31, 47, 511}, {1, 129, 513, 300}, {4, 64, 64, 64}, {1, 200, 37, 1},
	{5, 17, 130, 129},
}

// TestGEMMAgainstFloat64 checks every micro-kernel, layout and worker count against a float64
// reference: |got − exact| ≤ 2(k+1)·u·Σ_k|lhs·rhs| (u = unit roundoff of T), the standard bound
// for a sum of k products in any order (with or without fused multiply-add).
func TestGEMMAgainstFloat64(t *testing.T) {
	kernels32 := []microKernel[float32]{goKernel[float32]()}
	if k, ok := simdKernelF32(); ok {
		packed := k // the same kernel on packed A panels only, one tile a call
		packed.name, packed.half, packed.groups = k.name+"-packed", nil, nil
		kernels32 = append(kernels32, k, packed)
	}
	kernels64 := []microKernel[float64]{goKernel[float64]()}
	if k, ok := simdKernelF64(); ok {
		kernels64 = append(kernels64, k)
	}
	for ci, c := range gemmCases {
		for li, ll := range layouts {
			rl := layouts[(li+ci)%len(layouts)] // a different rhs layout per case
			for _, workers := range []int{1, 3} {
				name := fmt.Sprintf("b%d_m%d_n%d_k%d/lhs%s_rhs%s/w%d", c.batch, c.m, c.n, c.k, ll.name, rl.name, workers)
				seed := uint64(ci*100 + li*10 + workers)
				for _, kern := range kernels32 {
					t.Run(name+"/f32_"+kern.name, func(t *testing.T) { checkGEMM(t, kern, c, ll, rl, workers, seed, 0x1p-24) })
				}
				for _, kern := range kernels64 {
					t.Run(name+"/f64_"+kern.name, func(t *testing.T) { checkGEMM(t, kern, c, ll, rl, workers, seed, 0x1p-53) })
				}
			}
		}
	}
}

func checkGEMM[T Float](t *testing.T, kern microKernel[T], c gemmCase, ll, rl layout, workers int, seed uint64, unit float64) {
	l, r, out := randProduct[T](c, ll, rl, seed, 18)
	gemm(kern, l, r, out, c.batch, c.m, c.n, c.k, workers)
	checkProduct(t, c, l, r, out, unit, kern.name)
}

// randProduct returns operands of case c with layouts ll and rl, normal random values from
// (seed, salt), and an output [batch, m, n] filled with NaN (the product must overwrite it).
func randProduct[T Float](c gemmCase, ll, rl layout, seed, salt uint64) (l, r operand[T], out []T) {
	rng := rand.New(rand.NewPCG(seed, salt))
	lDims, rDims := ll.dims(c.batch, c.m, c.k), rl.dims(c.batch, c.n, c.k)
	lhs, rhs := make([]T, prod(lDims)), make([]T, prod(rDims))
	for i := range lhs {
		lhs[i] = T(rng.NormFloat64())
	}
	for i := range rhs {
		rhs[i] = T(rng.NormFloat64())
	}
	out = make([]T, c.batch*c.m*c.n)
	for i := range out {
		out[i] = T(math.NaN())
	}
	return newOperand(lhs, lDims, ll.contract, ll.batchAx), newOperand(rhs, rDims, rl.contract, rl.batchAx), out
}

// checkProduct fails t unless out [batch, m, n] is l·rᵀ within |got − exact| ≤ 2(k+1)·u·Σ|lhs·rhs|
// (where the float64 reference is NaN or ±Inf: the same).
func checkProduct[T Float](t *testing.T, c gemmCase, l, r operand[T], out []T, unit float64, what string) {
	t.Helper()
	bound := 2 * float64(c.k+1) * unit
	for b := range c.batch {
		for i := range c.m {
			for j := range c.n {
				var exact, mag float64
				for k := range c.k {
					x := float64(l.flat[l.batchOff[b]+l.crossOff[i]+l.contractOff[k]])
					y := float64(r.flat[r.batchOff[b]+r.crossOff[j]+r.contractOff[k]])
					exact += x * y
					mag += math.Abs(x * y)
				}
				got := float64(out[(b*c.m+i)*c.n+j])
				if math.IsNaN(exact) || math.IsInf(exact, 0) { // a NaN or infinite operand: the same
					if !(got == exact || math.IsNaN(got) && math.IsNaN(exact)) {
						t.Fatalf("out[%d,%d,%d] = %g, want %g (%s)", b, i, j, got, exact, what)
					}
					continue
				}
				if !(math.Abs(got-exact) <= bound*mag) {
					t.Fatalf("out[%d,%d,%d] = %g, want %g (error %.3g > bound %.3g; %s)",
						b, i, j, got, exact, math.Abs(got-exact), bound*mag, what)
				}
			}
		}
	}
}

func prod(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// TestOffsetsMultiAxis checks the offset tables on a rank-5 operand with two batch and two
// contracting axes listed out of order: element (batch, cross, contract) must be the one
// simplego's normalisation puts there.
func TestOffsetsMultiAxis(t *testing.T) {
	dims := []int{2, 3, 4, 5, 6} // axes: 0 batch, 1 cross, 2 contract, 3 batch, 4 contract
	batchAxes, contractAxes := []int{3, 0}, []int{4, 2}
	bOff, cOff, kOff := offsets(dims, contractAxes, batchAxes)
	if len(bOff) != 10 || len(cOff) != 3 || len(kOff) != 24 {
		t.Fatalf("table sizes %d %d %d, want 10 3 24", len(bOff), len(cOff), len(kOff))
	}
	strides := []int{360, 120, 30, 6, 1}
	for b3 := range 5 {
		for b0 := range 2 {
			for k4 := range 6 {
				for k2 := range 4 {
					b, k := b3*2+b0, k4*4+k2 // listed order: last listed axis fastest
					for c1 := range 3 {
						want := b0*strides[0] + c1*strides[1] + k2*strides[2] + b3*strides[3] + k4*strides[4]
						if got := bOff[b] + cOff[c1] + kOff[k]; got != want {
							t.Fatalf("offset(b=%d, c=%d, k=%d) = %d, want %d", b, c1, k, got, want)
						}
					}
				}
			}
		}
	}
}
