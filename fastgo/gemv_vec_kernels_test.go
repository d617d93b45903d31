package fastgo

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// The vector kernels of gemv, dotRows and groupRows in every vector mode this CPU runs (AVX-512,
// and AVX2+FMA — on an AVX-512 CPU with vecAVX512 cleared), called through their dispatching
// functions, on random inputs with odd lengths and tails, against exact references: the axpy
// kernels, which promise the fused multiply-adds of one chain per output in order, bit for bit
// against a correctly rounded FMA; the dot kernels within 2(k+1)·u·Σ|a·b| of the exact sum, and
// within twice that of plain Go's result (the same function in mode "go"). Non-finite inputs
// must give the float64 reference's NaN or infinity. The seed is printed; MHALAB_FASTGO_SEED=S
// replays one, MHALAB_FASTGO_CASES=N runs N rounds of random sizes (a soak).

// vecSeed returns the seed of the random inputs (MHALAB_FASTGO_SEED, else a fixed one), logged.
func vecSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(20261202)
	if s := os.Getenv("MHALAB_FASTGO_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MHALAB_FASTGO_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with MHALAB_FASTGO_SEED=%d)", seed, seed)
	return seed
}

// vecRounds is the rounds of random sizes after the fixed ones (MHALAB_FASTGO_CASES, else 3).
func vecRounds() int {
	if n, err := strconv.Atoi(os.Getenv("MHALAB_FASTGO_CASES")); err == nil && n > 0 {
		return n
	}
	return 3
}

// forVecModes runs f in each mode with vector kernels (skipping the test where there is none).
func forVecModes(t *testing.T, f func(t *testing.T, rng *rand.Rand)) {
	seed := vecSeed(t)
	ran := false
	for _, m := range vecModes() {
		if m.name == "go" {
			continue
		}
		ran = true
		t.Run(m.name, func(t *testing.T) {
			withVecMode(t, m)
			f(t, rand.New(rand.NewPCG(seed, 7)))
		})
	}
	if !ran {
		t.Skip("no vector kernels: this CPU (or build) has neither AVX-512 nor AVX2+FMA")
	}
}

// inPlainGo runs f with the vector loops off (mode "go") and restores the mode.
func inPlainGo(f func()) {
	p512, p2 := setVec(false, false)
	defer setVec(p512, p2)
	f()
}

// vecLengths are the vector lengths tried: empty, below, at and around the 8- and 16-lane
// vectors and the unrolled steps of 32 and 64, attention's 64 features, long rows; then random
// ones.
func vecLengths(rng *rand.Rand) []int {
	ns := []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 257, 1030}
	for range vecRounds() {
		ns = append(ns, rng.IntN(600))
	}
	return ns
}

// randVec returns n normal random values; with nonFinite, a few are NaN, +Inf or −Inf.
func randVec(rng *rand.Rand, n int, nonFinite bool) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	if nonFinite && n > 0 {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			if rng.IntN(2) == 0 {
				x[rng.IntN(n)] = float32(v)
			}
		}
	}
	return x
}

// fma32 is x·y + z rounded once to float32 (nearest even), as VFMADD rounds.
func fma32(x, y, z float32) float32 {
	if isFinite32(x) && isFinite32(y) && isFinite32(z) {
		p := new(big.Float).SetPrec(256).SetFloat64(float64(x))
		p.Mul(p, new(big.Float).SetPrec(256).SetFloat64(float64(y)))
		p.Add(p, new(big.Float).SetPrec(256).SetFloat64(float64(z)))
		f, _ := p.Float32()
		return f
	}
	return float32(float64(x)*float64(y) + float64(z)) // NaN or ±Inf: exact in float64
}

func isFinite32(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

// sameFloat reports whether x and y are the same value (NaN equal to NaN).
func sameFloat(x, y float32) bool { return x == y || x != x && y != y }

// exactDot returns Σ a[i]·b[i] in float64 (exact enough for the bound) and Σ|a[i]·b[i]|.
func exactDot(a, b []float32) (exact, mag float64) {
	for i := range a {
		p := float64(a[i]) * float64(b[i])
		exact += p
		mag += math.Abs(p)
	}
	return exact, mag
}

// checkDot fails t unless got is within 2(k+1)·u·mag of exact (where exact is NaN or ±Inf: the
// same), and within twice that of plain (plain Go's result).
func checkDot(t *testing.T, what string, got, plain float32, exact, mag float64, k int) {
	t.Helper()
	if math.IsNaN(exact) || math.IsInf(exact, 0) {
		if !sameFloat(got, float32(exact)) {
			t.Fatalf("%s = %g, want %g", what, got, exact)
		}
		return
	}
	bound := 2 * float64(k+1) * 0x1p-24 * mag
	if d := math.Abs(float64(got) - exact); !(d <= bound) {
		t.Fatalf("%s = %g, want %g (error %.3g > bound %.3g)", what, got, exact, d, bound)
	}
	if d := math.Abs(float64(got) - float64(plain)); !(d <= 2*bound) {
		t.Fatalf("%s = %g, plain Go %g (difference %.3g > %.3g)", what, got, plain, d, 2*bound)
	}
}

func TestVecAxpy(t *testing.T) {
	forVecModes(t, func(t *testing.T, rng *rand.Rand) {
		for _, n := range vecLengths(rng) {
			for _, nonFinite := range []bool{false, true} {
				dst, x := randVec(rng, n, nonFinite), randVec(rng, n+rng.IntN(9), nonFinite) // len(x) ≥ len(dst)
				s := float32(rng.NormFloat64())
				want := make([]float32, n)
				for i := range want {
					want[i] = fma32(s, x[i], dst[i])
				}
				plain, before := append([]float32(nil), dst...), append([]float32(nil), dst...)
				inPlainGo(func() { axpy(plain, s, x[:n]) })
				if !axpyF32Vec(dst, s, x) {
					t.Fatal("axpyF32Vec declined")
				}
				for i := range want {
					if !sameFloat(dst[i], want[i]) {
						t.Fatalf("n %d: dst[%d] = %g, want fma %g", n, i, dst[i], want[i])
					}
					// plain Go rounds s·x and the sum: within 2u·(|s·x| + |dst|) of the FMA
					mag := math.Abs(float64(s)*float64(x[i])) + math.Abs(float64(before[i]))
					if d := math.Abs(float64(dst[i]) - float64(plain[i])); isFinite32(want[i]) && !(d <= 0x1p-23*mag) {
						t.Fatalf("n %d: dst[%d] = %g, plain Go %g", n, i, dst[i], plain[i])
					}
				}
			}
		}
	})
}

func TestVecDot(t *testing.T) {
	forVecModes(t, func(t *testing.T, rng *rand.Rand) {
		for _, n := range vecLengths(rng) {
			for _, nonFinite := range []bool{false, true} {
				// dot: a against a longer b; dot4: four rows against b; dot4x4: four against four.
				var a, b [4][]float32
				for r := range 4 {
					a[r], b[r] = randVec(rng, n, nonFinite), randVec(rng, n+rng.IntN(9), nonFinite)
				}
				var plain float32
				inPlainGo(func() { plain = dot(a[0], b[0][:n]) })
				got, ok := dotF32Vec(a[0], b[0])
				if !ok {
					t.Fatal("dotF32Vec declined")
				}
				exact, mag := exactDot(a[0], b[0][:n])
				checkDot(t, fmt.Sprintf("n %d: dot", n), got, plain, exact, mag, n)

				var four [4]float32
				if !dot4F32Vec(a[0], a[1], a[2], a[3], b[0], &four) {
					t.Fatal("dot4F32Vec declined")
				}
				for r := range 4 {
					inPlainGo(func() { plain = dot(a[r], b[0][:n]) })
					exact, mag := exactDot(a[r], b[0][:n])
					checkDot(t, fmt.Sprintf("n %d: dot4[%d]", n, r), four[r], plain, exact, mag, n)
				}

				var sixteen [16]float32
				for s := range 4 {
					b[s] = b[s][:n]
				}
				if !dot4x4F32Vec(&a, &b, &sixteen) {
					t.Fatal("dot4x4F32Vec declined")
				}
				for r := range 4 {
					for s := range 4 {
						inPlainGo(func() { plain = dot(a[r], b[s]) })
						exact, mag := exactDot(a[r], b[s])
						checkDot(t, fmt.Sprintf("n %d: dot4x4[%d,%d]", n, r, s), sixteen[4*r+s], plain, exact, mag, n)
					}
				}
			}
		}
	})
}

// TestVecAxpy64 checks the 64-column axpy (1 and 4 rows; B's rows at scattered offsets, C's rows
// ldc apart) bit for bit against one correctly rounded FMA chain per output in k order, that it
// writes nothing beyond the 64 columns, and that it declines 2 and 3 rows.
func TestVecAxpy64(t *testing.T) {
	forVecModes(t, func(t *testing.T, rng *rand.Rand) {
		ks := []int{1, 2, 3, 7, 64, 65, 130}
		for range vecRounds() {
			ks = append(ks, 1+rng.IntN(300))
		}
		for _, k := range ks {
			for _, rows := range []int{1, 4, 2, 3} {
				nonFinite := rng.IntN(3) == 0
				const ldb, ldc = 80, 69
				base := rng.IntN(16)
				bRows := k + rng.IntN(k+1)
				b := randVec(rng, base+bRows*ldb, nonFinite)
				off := make([]int, k) // k distinct rows of B, in random order
				for kk, r := range rng.Perm(bRows)[:k] {
					off[kk] = r * ldb
				}
				a := randVec(rng, rows*k, nonFinite)
				c := make([]float32, rows*ldc)
				const sentinel = -12345
				for i := range c {
					c[i] = sentinel
				}
				ok := axpy64F32Vec(a, rows, k, b, base, off, c, ldc)
				if ok != (rows == 1 || rows == 4) {
					t.Fatalf("k %d, %d rows: axpy64F32Vec reported %v", k, rows, ok)
				}
				for r := range rows {
					for j := range ldc {
						got := c[r*ldc+j]
						want := float32(sentinel)
						if ok && j < 64 {
							want = 0
							for kk := range k {
								want = fma32(a[r*k+kk], b[base+off[kk]+j], want)
							}
						}
						if !sameFloat(got, want) {
							t.Fatalf("k %d, %d rows: c[%d, %d] = %g, want %g", k, rows, r, j, got, want)
						}
					}
				}
			}
		}
	})
}

// TestVecDotRows checks dotRowsF32Vec (64 features: dotRows64; other lengths: dot4 by fours)
// for row counts around its steps of 4, rows a stride apart, against the exact sums and plain
// Go's dot, and that it writes nothing beyond out.
func TestVecDotRows(t *testing.T) {
	forVecModes(t, func(t *testing.T, rng *rand.Rand) {
		ks := []int{64, 1, 5, 8, 63, 65, 100, 256}
		ns := []int{0, 1, 3, 4, 5, 7, 17, 64, 65}
		for range vecRounds() {
			ks, ns = append(ks, 1+rng.IntN(300)), append(ns, rng.IntN(300))
		}
		for _, k := range ks {
			for _, n := range ns {
				nonFinite := rng.IntN(3) == 0
				ldb := k + []int{0, 3, 16}[rng.IntN(3)]
				a := randVec(rng, k, nonFinite)
				b := randVec(rng, max(0, (n-1)*ldb+k), nonFinite)
				out := make([]float32, n+1)
				out[n] = -12345
				if !dotRowsF32Vec(a, b, ldb, out[:n]) {
					t.Fatal("dotRowsF32Vec declined")
				}
				if out[n] != -12345 {
					t.Fatalf("k %d, n %d: wrote beyond out", k, n)
				}
				for j := range n {
					row := b[j*ldb:][:k]
					var plain float32
					inPlainGo(func() { plain = dot(a, row) })
					exact, mag := exactDot(a, row)
					checkDot(t, fmt.Sprintf("k %d, n %d, ldb %d: out[%d]", k, n, ldb, j), out[j], plain, exact, mag, k)
				}
			}
		}
	})
}

// TestVecWeightRows64 checks groupRows' weighted-sum kernel (weightRows64) directly: 1 … 9
// weight rows (odd counts: a last single row), value counts around its blocks of
// groupBlockRows, rows a stride apart in all three operands, against the exact sums and plain
// Go's dot of each weight row with each value column, and that it writes nothing beyond the 64
// columns of each output row.
func TestVecWeightRows64(t *testing.T) {
	forVecModes(t, func(t *testing.T, rng *rand.Rand) {
		ns := []int{1, 5, 63, 64, 65, 130, 200}
		for range vecRounds() {
			ns = append(ns, 1+rng.IntN(400))
		}
		for _, n := range ns {
			for _, g := range []int{1, 2, 3, 5, 8, 9} {
				nonFinite := rng.IntN(3) == 0
				ldw, ldv, ldo := n+rng.IntN(4), 64+16*rng.IntN(2), 64+rng.IntN(7)
				w := randVec(rng, (g-1)*ldw+n, nonFinite)
				v := randVec(rng, (n-1)*ldv+64, nonFinite)
				out := make([]float32, g*ldo)
				for i := range out {
					out[i] = -12345
				}
				weightRows64(w, ldw, g, v, ldv, n, out, ldo)
				col := make([]float32, n)
				for i := range g {
					for c := range ldo {
						got := out[i*ldo+c]
						if c >= 64 {
							if got != -12345 {
								t.Fatalf("n %d, g %d: wrote out[%d, %d]", n, g, i, c)
							}
							continue
						}
						for j := range n {
							col[j] = v[j*ldv+c]
						}
						var plain float32
						inPlainGo(func() { plain = dot(w[i*ldw:][:n], col) })
						exact, mag := exactDot(w[i*ldw:][:n], col)
						checkDot(t, fmt.Sprintf("n %d, g %d: out[%d, %d]", n, g, i, c), got, plain, exact, mag, n)
					}
				}
			}
		}
	})
}
