//go:build goexperiment.simd && amd64 && !go1.27

package fastgo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"simd/archsimd"
	"strings"
	"testing"
)

// The AVX2 loops (vec_avx2.go, logistic_avx2.go) are called here directly, so they run on an
// AVX-512 CPU too, and compared with plain Go on random rows of every length up to a few vectors
// (the tails) with NaN, ±Inf, ±0 and the ends of exp's range; where the CPU has AVX-512 also with
// the AVX-512 loops, whose bits they promise.

// MHALAB_FASTGO_VEC=go or avx2 (one name) lowers the element-wise loops of this test binary (an
// A/B of the benchmarks: go test -c, then run the binary with each value alternately). It clears
// vecAVX512 (and for go vecAVX2), so the other loops gated on them fall back as well. A list
// (avx2,go) or ab is vecLoop's: the benchmarks that use it alternate the modes themselves
// (gemv_vec_test.go).
func init() {
	switch v := os.Getenv(benchVecEnv); {
	case v == "", v == "ab", strings.Contains(v, ","):
	case v == "go":
		vecAVX512, vecAVX2 = false, false
	case v == "avx2":
		if !vecAVX2 {
			panic("MHALAB_FASTGO_VEC=avx2: this CPU has no AVX2 with FMA")
		}
		vecAVX512 = false
	default:
		panic(fmt.Sprintf("MHALAB_FASTGO_VEC=%q: want go, avx2, a list (avx2,go) or ab", v))
	}
}

func needAVX2(t *testing.T) {
	t.Helper()
	if !vecAVX2 {
		t.Skip("the CPU has no AVX2 with FMA (or MHALAB_FASTGO_VEC=go)")
	}
}

var (
	negZero32 = float32(math.Copysign(0, -1))
	inf32     = float32(math.Inf(1))
	nan32     = float32(math.NaN())
)

// lengths are the row lengths the loops are tried on: every one up to 3 vectors of 64 and a
// few long ones.
func lengths() []int {
	ns := []int{255, 256, 257, 1000, 4099}
	for n := range 200 {
		ns = append(ns, n)
	}
	return ns
}

// guarded returns a slice of n elements followed in its backing array by sentinels, and a check
// that the loop wrote nothing past n.
func guarded(t *testing.T, n int) ([]float32, func()) {
	t.Helper()
	buf := make([]float32, n+24)
	for i := range buf {
		buf[i] = -12345
	}
	return buf[:n], func() {
		t.Helper()
		for i, v := range buf[n:] {
			if v != -12345 {
				t.Fatalf("n %d: element %d past the end written (%g)", n, n+i, v)
			}
		}
	}
}

// expSpecials: special values of exp's input — NaN, ±Inf, ±0, the ends of the float32 range
// and of exp's (overflow near 88.72, the subnormal range from −87.34, 0 below −103.97), and
// the clamps (88.8, −104).
var expSpecials = []float32{nan32, inf32, -inf32, 0, negZero32, math.MaxFloat32, -math.MaxFloat32,
	0x1p-149, -0x1p-149, 1e-30, -1e-30, 88.72283, 88.72284, 88.7, 88.8, 88.9, 89, 1e10, -1e10,
	-87.33655, -87.3366, -100, -103.27893, -103.97207, -103.97208, -103.9721, -104, -104.5, -150,
	0.5 * math.Ln2, -0.5 * math.Ln2, math.Ln2, 1, -1}

// expInput fills v with uniform values over −110 … 90 and, one in ten, a special value.
func expInput(rng *rand.Rand, v []float32) {
	for i := range v {
		if rng.IntN(10) == 0 {
			v[i] = expSpecials[rng.IntN(len(expSpecials))]
		} else {
			v[i] = float32(rng.Float64()*200 - 110)
		}
	}
}

// expNear: exp's contract against the correctly rounded float32(math.Exp(x)): NaN for NaN (x
// itself), else within 2 ulp of it (2 smallest subnormals below the normal range), and +Inf or
// 0 only where it is.
func expNear(x, got float32) bool {
	if x != x {
		return math.Float32bits(got) == math.Float32bits(x)
	}
	want := float32(math.Exp(float64(x)))
	if got == want {
		return true
	}
	if got != got || math.IsInf(float64(got), 0) || math.IsInf(float64(want), 0) {
		return false
	}
	ulp := float64(math.Nextafter32(want, inf32) - want)
	if want < 0x1p-126 {
		ulp = 0x1p-149
	}
	return math.Abs(float64(got)-float64(want)) <= 2*ulp
}

// TestExpF32AVX2: expF32AVX2 within exp's contract on random rows of every length up to 200
// (the tails) with special values, on every 4093rd float32 bit pattern (all signs and
// exponents: NaNs, infinities, subnormals) and on every float32 near the overflow and underflow
// edges and the clamps; the AVX-512 loop's bits where the CPU has it.
func TestExpF32AVX2(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(vecSeed(t), 31))
	check := func(what string, src []float32) {
		t.Helper()
		dst, tail := guarded(t, len(src))
		expF32AVX2(dst, src)
		tail()
		for i, x := range src {
			if !expNear(x, dst[i]) {
				t.Fatalf("%s: exp(%g) (bits %#x) = %g (bits %#x), math.Exp %g", what, x, math.Float32bits(x), dst[i], math.Float32bits(dst[i]), float32(math.Exp(float64(x))))
			}
		}
		if vecAVX512 {
			ref := make([]float32, len(src))
			expF32Vec(ref, src)
			for i := range src {
				if math.Float32bits(ref[i]) != math.Float32bits(dst[i]) {
					t.Fatalf("%s: exp(%g): AVX2 %g (bits %#x), AVX-512 %g (bits %#x)", what, src[i], dst[i], math.Float32bits(dst[i]), ref[i], math.Float32bits(ref[i]))
				}
			}
		}
	}
	for _, n := range lengths() {
		for trial := range 4 {
			src := make([]float32, n)
			expInput(rng, src)
			check(fmt.Sprintf("n %d trial %d", n, trial), src)
		}
	}
	check("specials", expSpecials)
	sweep := make([]float32, 0, 4096)
	for b := uint64(0); b < 1<<32; b += 4093 {
		sweep = append(sweep, math.Float32frombits(uint32(b)))
		if len(sweep) == cap(sweep) {
			check("sweep", sweep)
			sweep = sweep[:0]
		}
	}
	check("sweep", sweep)
	// every float32 within 4096 of the edges: overflow, the subnormals, 0, and the clamps
	for _, edge := range []float32{88.72283, -87.33655, -103.97208, 88.8, -104} {
		b := math.Float32bits(edge)
		for d := range uint32(8192) {
			sweep = append(sweep, math.Float32frombits(b-4096+d))
		}
		check(fmt.Sprintf("around %g", edge), sweep)
		sweep = sweep[:0]
	}
	// in place, as the fused softmax pass runs it
	src := make([]float32, 1001)
	expInput(rng, src)
	dst := append([]float32(nil), src...)
	expF32AVX2(dst, dst)
	for i, x := range src {
		if !expNear(x, dst[i]) {
			t.Fatalf("in place: exp(%g) = %g", x, dst[i])
		}
	}
}

// TestMaxF32AVX2: maxF32AVX2 equals Go's max bit for bit (any NaN gives NaN, +0 above −0) on
// rows of every length up to 200 and longer, with NaN, ±0 and ±Inf placed at random, for the
// inits −Inf, +0, −0, NaN and a finite value.
func TestMaxF32AVX2(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(vecSeed(t), 32))
	specials := []float32{nan32, 0, negZero32, inf32, -inf32}
	inits := []float32{-inf32, 0, negZero32, nan32, -2.5}
	for _, n := range lengths() {
		for trial := range 12 {
			row := make([]float32, n)
			for i := range row {
				row[i] = float32(rng.NormFloat64()) - 3
				if trial%4 == 1 {
					row[i] = -float32(rng.Float64()) // non-positive: the maximum may be a zero
				}
			}
			if n > 0 && trial > 0 {
				for range 1 + trial%3 {
					row[rng.IntN(n)] = specials[rng.IntN(len(specials))]
				}
			}
			for _, init := range inits {
				got, want := maxF32AVX2(init, row), maxF32Go(init, row)
				if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
					t.Fatalf("n %d trial %d init %v: maxF32AVX2 = %v (%#x), Go's max %v (%#x)", n, trial, init, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
	}
}

// TestSumF32AVX2: sumF32AVX2 adds in sumF32Vec's documented order (replayed in plain Go as
// TestSumF32VecOrder does) bit for bit, on rows of every length up to 200 and longer, and equals
// the AVX-512 loop where the CPU has it.
func TestSumF32AVX2(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(vecSeed(t), 33))
	for _, n := range lengths() {
		row := make([]float32, n)
		for i := range row {
			row[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(6)-3)))
		}
		want := sumF32DocumentedOrder(row)
		if got := sumF32AVX2(row); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("n %d: sumF32AVX2 = %v, the documented order gives %v", n, got, want)
		}
		if vecAVX512 {
			if got, _ := sumF32Vec(row); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("n %d: sumF32Vec = %v, the documented order gives %v", n, got, want)
			}
		}
	}
}

// TestBinaryF32AVX2: binaryF32AVX2 equals the plain-Go loops bit for bit (NaN for NaN) for Add,
// Sub, Mul and Div, vector and scalar b, swapped or not, on rows of every length up to 200 with
// NaN, ±Inf, ±0 and values that overflow and underflow; nothing written past the row.
func TestBinaryF32AVX2(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(vecSeed(t), 34))
	specials := []float32{nan32, inf32, -inf32, 0, negZero32, math.MaxFloat32, 0x1p-149, 1e-30, 1e30}
	value := func() float32 {
		if rng.IntN(8) == 0 {
			return specials[rng.IntN(len(specials))]
		}
		return float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
	}
	for _, n := range lengths() {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = value(), value()
		}
		for _, o := range []op{opAdd, opSub, opMul, opDiv} {
			for _, bVec := range []bool{true, false} {
				for _, swap := range []bool{false, true} {
					bb := b
					if !bVec {
						bb = []float32{value()}
					}
					dst, tail := guarded(t, n)
					binaryF32AVX2(o, dst, a, bb, bVec, swap)
					tail()
					for i := range dst {
						x, y := a[i], bb[0]
						if bVec {
							y = bb[i]
						}
						if swap {
							x, y = y, x
						}
						var want float32
						switch o {
						case opAdd:
							want = x + y
						case opSub:
							want = x - y
						case opMul:
							want = x * y
						case opDiv:
							want = x / y
						}
						if got := dst[i]; math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
							t.Fatalf("n %d op %v bVec %v swap %v: [%d] %g ⊙ %g = %g, plain Go %g", n, o, bVec, swap, i, x, y, got, want)
						}
					}
				}
			}
		}
	}
}

// TestCopyRunsF32AVX2: copyRunsF32AVX2 copies each run of width (multiples of 16) from its
// offset, and nothing past the last.
func TestCopyRunsF32AVX2(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(vecSeed(t), 35))
	for _, width := range []int{16, 32, 48, 64, 128} {
		src := make([]float32, 4*width+37)
		for i := range src {
			src[i] = rng.Float32()
		}
		offs := make([]int, 1+rng.IntN(40))
		for k := range offs {
			offs[k] = rng.IntN(len(src) - width + 1)
		}
		dst, tail := guarded(t, len(offs)*width)
		copyRunsF32AVX2(dst, src, offs, width)
		tail()
		for k, off := range offs {
			for j := range width {
				if dst[k*width+j] != src[off+j] {
					t.Fatalf("width %d run %d (offset %d) [%d]: %g, want %g", width, k, off, j, dst[k*width+j], src[off+j])
				}
			}
		}
	}
}

// TestLogisticF32AVX2: logisticF32AVX2 against GoMLX's formula in plain Go (logisticGo): equal
// but for rare double roundings, 1 ulp (at most 1 element in 10⁴), NaN for NaN, on random
// rows of every length up to 200 with special values and on every 4093rd float32 bit pattern; the
// AVX-512 loop's bits where the CPU has it.
func TestLogisticF32AVX2(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(vecSeed(t), 37))
	total, off := 0, 0
	check := func(what string, src []float32) {
		t.Helper()
		dst, tail := guarded(t, len(src))
		logisticF32AVX2(dst, src)
		tail()
		want := make([]float32, len(src))
		logisticGo(want, src)
		for i, x := range src {
			total++
			got := dst[i]
			if x != x {
				if got == got {
					t.Fatalf("%s: logistic(NaN %#x) = %g", what, math.Float32bits(x), got)
				}
				continue
			}
			if got == want[i] {
				continue
			}
			if got != got || math.Nextafter32(want[i], got) != got {
				t.Fatalf("%s: logistic(%g) = %g (bits %#x), GoMLX's formula %g (bits %#x)", what, x, got, math.Float32bits(got), want[i], math.Float32bits(want[i]))
			}
			off++
		}
		if vecAVX512 {
			ref := make([]float32, len(src))
			logisticF32Vec(ref, src)
			for i := range src {
				if math.Float32bits(ref[i]) != math.Float32bits(dst[i]) {
					t.Fatalf("%s: logistic(%g): AVX2 %g (bits %#x), AVX-512 %g (bits %#x)", what, src[i], dst[i], math.Float32bits(dst[i]), ref[i], math.Float32bits(ref[i]))
				}
			}
		}
	}
	for _, n := range lengths() {
		src := make([]float32, n)
		for i := range src {
			switch r := rng.IntN(20); {
			case r == 0:
				src[i] = expSpecials[rng.IntN(len(expSpecials))]
			case r == 1:
				src[i] = float32(rng.Float64()*1600 - 800)
			default:
				src[i] = float32(rng.NormFloat64() * 4)
			}
		}
		check(fmt.Sprintf("n %d", n), src)
	}
	sweep := make([]float32, 0, 4096)
	for b := uint64(0); b < 1<<32; b += 4093 {
		sweep = append(sweep, math.Float32frombits(uint32(b)))
		if len(sweep) == cap(sweep) {
			check("sweep", sweep)
			sweep = sweep[:0]
		}
	}
	check("sweep", sweep)
	t.Logf("%d of %d elements 1 ulp from GoMLX's formula", off, total)
	if off*10000 > total {
		t.Errorf("%d of %d elements differ from GoMLX's formula (by 1 ulp), want ≤ 1 in 10⁴", off, total)
	}
}

// TestExp64x4: exp64x4 (logistic's float64 exp) within 2 ulp of math.Exp (each about 1 ulp
// from e^x) over x ≤ 0 — down through the subnormals (there 2 units of the smallest subnormal)
// to 0 below −745.2 — and −Inf gives 0; the AVX-512 exp64's bits where the CPU has it.
func TestExp64x4(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(vecSeed(t), 38))
	xs := []float64{0, math.Copysign(0, -1), math.Inf(-1), -1e-300, -0x1p-1074, -708.3964, -708.4, -709.1, -744.44, -745.13, -745.14, -745.2, -746, -746.5, -800, -1e300,
		-0.5 * math.Ln2, -math.Ln2, -1}
	for range 200000 {
		switch rng.IntN(3) {
		case 0:
			xs = append(xs, -rng.Float64()*760)
		case 1:
			xs = append(xs, -rng.Float64()*2)
		default:
			xs = append(xs, -700-rng.Float64()*50)
		}
	}
	for len(xs)%8 != 0 {
		xs = append(xs, -1)
	}
	for i := 0; i < len(xs); i += 8 {
		var out [8]float64
		exp64x4(archsimd.LoadFloat64x4((*[4]float64)(xs[i : i+4]))).Store((*[4]float64)(out[:4]))
		exp64x4(archsimd.LoadFloat64x4((*[4]float64)(xs[i+4 : i+8]))).Store((*[4]float64)(out[4:]))
		for j, got := range out {
			x := xs[i+j]
			want := math.Exp(x)
			ulp := math.Nextafter(want, math.Inf(1)) - want
			if want < 0x1p-1022 {
				ulp = 0x1p-1074
			}
			if !(math.Abs(got-want) <= 2*ulp) {
				t.Fatalf("exp64x4(%v) = %v (bits %#x), math.Exp %v (bits %#x)", x, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
		if vecAVX512 {
			var ref [8]float64
			exp64(archsimd.LoadFloat64x8((*[8]float64)(xs[i : i+8]))).Store(&ref)
			if ref != out {
				t.Fatalf("exp64 of %v: AVX2 %v, AVX-512 %v", xs[i:i+8], out, ref)
			}
		}
	}
}
