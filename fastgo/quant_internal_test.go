package fastgo

import (
	enc "encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mhalab/mhalab/models/gguf"
	"github.com/mhalab/mhalab/models/quant"
)

// quantKernelSets: the plain-Go kernels and simdKernelSets.
func quantKernelSets() []quantKernels {
	return append([]quantKernels{goQuantKernels}, simdKernelSets()...)
}

// simdKernelSets: the SIMD kernel sets this build has and this CPU runs — the AVX-512 set, and
// the AVX2 one (which an AVX-512 CPU runs too, so that either CI machine tests it).
func simdKernelSets() []quantKernels {
	var kernels []quantKernels
	if k, ok := simdQuantKernels(); ok {
		kernels = append(kernels, k)
	}
	if k, ok := avx2QuantKernels(); ok && (len(kernels) == 0 || kernels[0].name != k.name) {
		kernels = append(kernels, k)
	}
	return kernels
}

// randomPacked returns a rows × cols matrix of format t with random blocks: scales drawn from
// normal halves (exponents −10 … −3, either sign for Q4_1's m), one block of each row 0 ≤ r < 3
// with a zero or subnormal scale (f16's slow path), random quants.
func randomPacked(t testing.TB, f gguf.TensorType, rows, cols int, seed uint64) *quant.Matrix {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	half := func() uint16 { return uint16(rng.IntN(2))<<15 | uint16(5+rng.IntN(8))<<10 | uint16(rng.IntN(1024)) }
	data := make([]byte, rows*cols/32*f.BlockBytes())
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	for b := 0; b < rows*cols/32; b++ {
		blk := data[b*f.BlockBytes():]
		d := half() &^ 0x8000
		switch b {
		case 0:
			d = 0
		case 1:
			d = 0x0123 // subnormal
		}
		enc.LittleEndian.PutUint16(blk, d)
		if f == gguf.TensorQ4_1 {
			enc.LittleEndian.PutUint16(blk[2:], half())
		}
	}
	m, err := quant.NewMatrix(f, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkQuant compares y [M, rows] with the float64 sum of the dequantised weights: |y − exact|
// ≤ 2(cols+1)·u·Σ(|d·q|·|x̃| + |m·x|) (u = 2⁻²⁴), the bound for a float32 sum of cols products in
// any order and grouping — Σ(d·q + m)·x or, per block, d·Σq·x + m·Σx (Q8_0: m = 0). With q8 (the
// matrix–vector kernels, which quantise x to 16-bit blocks, quant_act.go) x̃ = |x| + e and the
// bound adds Σ |d·q|·e, e = (1+2⁻¹⁰)·a/(2·qMax) per element of a block of x whose largest |x|
// is a: the activations' rounding to d_a·q_a, d_a = a/qMax (e = a where a < tinyBlock: zeros).
func checkQuant(t *testing.T, m *quant.Matrix, x []float32, M int, y []float32, q8 bool) {
	t.Helper()
	w := m.Dequantise()
	terms := make([]float64, m.Rows*m.Cols) // |d·q| + |m| of each weight
	dq := make([]float64, m.Rows*m.Cols)    // |d·q|
	for r := range m.Rows {
		for b := 0; b < m.Cols/32; b++ {
			blk := m.Row(r)[b*m.Format.BlockBytes():]
			mm := 0.0
			if m.Format == gguf.TensorQ4_1 {
				mm = float64(gguf.Float16(enc.LittleEndian.Uint16(blk[2:])))
			}
			for j := range 32 {
				c := r*m.Cols + 32*b + j
				dq[c] = math.Abs(float64(w[c]) - mm)
				terms[c] = dq[c] + math.Abs(mm)
			}
		}
	}
	e := make([]float64, len(x)) // the activations' rounding error bound, per element
	if q8 {
		for i := 0; i < len(x); i += 32 {
			a := 0.0
			for _, v := range x[i : i+32] {
				a = max(a, math.Abs(float64(v)))
			}
			for j := range 32 {
				e[i+j] = (1 + 0x1p-10) * a / (2 * qMax)
				if a < tinyBlock { // rounded to zeros
					e[i+j] = a
				}
			}
		}
	}
	for i := range M {
		for r := range m.Rows {
			var exact, abs, quant float64
			for c := range m.Cols {
				xc, ec := float64(x[i*m.Cols+c]), e[i*m.Cols+c]
				exact += float64(w[r*m.Cols+c]) * xc
				abs += terms[r*m.Cols+c]*math.Abs(xc) + dq[r*m.Cols+c]*ec
				quant += dq[r*m.Cols+c] * ec
			}
			bound := 2*float64(m.Cols+1)*0x1p-24*abs + quant
			if d := math.Abs(float64(y[i*m.Rows+r]) - exact); d > bound || math.IsNaN(float64(y[i*m.Rows+r])) {
				t.Fatalf("y[%d, %d] = %g, want %g ± %.3g (off by %.3g)", i, r, y[i*m.Rows+r], exact, bound, d)
			}
		}
	}
}

// TestQuantKernelsAgainstFloat64: every packed-row kernel (plain Go, and AVX-512 when built
// with it) and quantMatMul with M = 1 (x quantised to 8-bit blocks) and M > 1 (float32), 1 and
// 3 workers, within checkQuant's bound.
func TestQuantKernelsAgainstFloat64(t *testing.T) {
	kernels := quantKernelSets()
	for _, f := range []gguf.TensorType{gguf.TensorQ4_1, gguf.TensorQ8_0} {
		for _, sz := range [][2]int{{6, 64}, {4, 96}, {48, 576}, {96, 1536}, {3, 2080}} { // odd block counts; 65 blocks > stackBlocks
			rows, cols := sz[0], sz[1]
			m := randomPacked(t, f, rows, cols, uint64(rows*cols))
			h := quant.Header{Format: f, Rows: rows, Cols: cols}
			shape, err := quant.CarrierShape(f, rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			h.Bt = shape[0]
			for _, M := range []int{1, 3} {
				rng := rand.New(rand.NewPCG(uint64(M), 9))
				x := make([]float32, M*cols) // [M, cols]
				for i := range x {
					x[i] = float32(rng.NormFloat64())
					if i >= 32 && i < 64 { // a block below tinyBlock (M = 1: rounded to zeros)
						x[i] *= 1e-37
					}
				}
				// lhs [Bt, M, C] as quant.Dot lays x out.
				bt, c, n := shape[0], shape[1], shape[2]
				lhs := make([]float32, len(x))
				for b := range bt {
					for i := range M {
						copy(lhs[(b*M+i)*c:(b*M+i+1)*c], x[i*cols+b*c:i*cols+(b+1)*c])
					}
				}
				for _, k := range kernels {
					for _, workers := range []int{1, 3} {
						t.Run(fmt.Sprintf("%s/%dx%d/M%d/%s/w%d", f, rows, cols, M, k.name, workers), func(t *testing.T) {
							out := make([]float32, bt*M*n) // [Bt, M, N]
							quantMatMul(k, h, planar(m), lhs, M, out, workers)
							y := make([]float32, M*rows) // [M, rows]
							for b := range bt {
								for i := range M {
									copy(y[i*rows+b*n:i*rows+(b+1)*n], out[(b*M+i)*n:(b*M+i+1)*n])
								}
							}
							checkQuant(t, m, x, M, y, M == 1)
						})
					}
				}
			}
		}
	}
}

// TestDequantRow: every kernel set's dequant gives gguf.Dequantise's float32 weights bit for
// bit (the M > 1 path then equals the float32 path).
func TestDequantRow(t *testing.T) {
	kernels := quantKernelSets()
	for _, f := range []gguf.TensorType{gguf.TensorQ4_1, gguf.TensorQ8_0} {
		for _, cols := range []int{96, 576, 2080} {
			m := randomPacked(t, f, 3, cols, uint64(cols))
			want := m.Dequantise()
			rows := planar(m)
			for _, k := range kernels {
				w := make([]float32, cols)
				for r := range 3 {
					k.dequant(f == gguf.TensorQ4_1, rows[r*m.RowBytes():(r+1)*m.RowBytes()], w)
					for c, v := range w {
						if math.Float32bits(v) != math.Float32bits(want[r*cols+c]) {
							t.Fatalf("%s %s cols %d: w[%d, %d] = %g, want %g", f, k.name, cols, r, c, v, want[r*cols+c])
						}
					}
				}
			}
		}
	}
}

// TestF16 compares the fast half conversion with gguf.Float16 on every finite half.
func TestF16(t *testing.T) {
	for h := range 1 << 16 {
		if h&0x7c00 == 0x7c00 {
			continue // Inf, NaN: quant.NewMatrix refuses them as scales
		}
		got, want := f16([]byte{byte(h), byte(h >> 8)}), gguf.Float16(uint16(h))
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("f16(%#04x) = %g, want %g", h, got, want)
		}
	}
}

// TestReadCarrierRejects: a float32 tensor that is not a carrier is not taken for one.
func TestReadCarrierRejects(t *testing.T) {
	m := randomPacked(t, gguf.TensorQ4_1, 48, 576, 1)
	words, shape, err := m.Carrier()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := quant.ReadCarrier(words, shape[0], shape[1], shape[2]); !ok {
		t.Fatal("a carrier was not recognised")
	}
	if _, _, ok := quant.ReadCarrier(words, shape[0], shape[2], shape[1]); ok {
		t.Fatal("a carrier with swapped axes was recognised")
	}
	for w := range 7 {
		bad := append([]float32(nil), words...)
		bad[w] = math.Float32frombits(math.Float32bits(bad[w]) ^ 1)
		if _, _, ok := quant.ReadCarrier(bad, shape[0], shape[1], shape[2]); ok {
			t.Fatalf("a carrier with header word %d changed was recognised", w)
		}
	}
	if _, _, ok := quant.ReadCarrier(make([]float32, len(words)), shape[0], shape[1], shape[2]); ok {
		t.Fatal("zeros were recognised as a carrier")
	}
}

// planar is m's rows in the carrier's layout.
func planar(m *quant.Matrix) []byte {
	out := make([]byte, len(m.Data))
	rb := m.RowBytes()
	for r := range m.Rows {
		quant.Planar(m.Format, m.Row(r), out[r*rb:(r+1)*rb])
	}
	return out
}

// TestQuantiseX: each block of x is rounded to d·q with |x − d·q| ≤ (1+2⁻¹⁰)·d/2, |q| ≤ qMax
// (reached at the block's largest |x|), s the block's sum; an all-zero block gives d = 0,
// q = 0; the padding of d and s is zero.
func TestQuantiseX(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	x := make([]float32, 32*5)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * float32(math.Pow(10, float64(i/32-2)))
	}
	clear(x[64:96])      // block 2
	x[3*32+7] = 0x1p-120 // block 3: tiny, below tinyBlock: zeros
	for j := range 32 {
		if j != 7 {
			x[3*32+j] = 0
		}
	}
	kernels := quantKernelSets()
	ref := &qAct{}
	quantiseX(x, ref)
	for _, k := range kernels {
		t.Run(k.name, func(t *testing.T) { testQuantise(t, k, x, ref) })
	}
}

// testQuantise is TestQuantiseX for one kernel set, whose d and q also equal ref's (quantiseX's).
func testQuantise(t *testing.T, k quantKernels, x []float32, ref *qAct) {
	a := &qAct{d: []float32{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}}
	k.quantise(x, a)
	if !slices.Equal(a.d, ref.d) || !slices.Equal(a.q, ref.q) {
		t.Fatalf("d or q differ from quantiseX's: d %v, want %v", a.d, ref.d)
	}
	if a.nb != 5 || len(a.d) != 16 || len(a.s) != 16 || len(a.q) != 160 {
		t.Fatalf("nb %d, len(d) %d, len(s) %d, len(q) %d; want 5, 16, 16, 160", a.nb, len(a.d), len(a.s), len(a.q))
	}
	for b := range 16 {
		if b >= 5 {
			if a.d[b] != 0 || a.s[b] != 0 {
				t.Fatalf("padding d[%d] = %g, s[%d] = %g, want 0", b, a.d[b], b, a.s[b])
			}
			continue
		}
		var sum float64
		top := 0
		for j := range 32 {
			v, q := float64(x[32*b+j]), a.q[32*b+j]
			sum += v
			top = max(top, int(q), -int(q))
			allowed := (1 + 0x1p-10) * float64(a.d[b]) / 2
			if b == 3 {
				allowed = tinyBlock
			}
			if e := math.Abs(v - float64(a.d[b])*float64(q)); e > allowed || q < -qMax {
				t.Fatalf("block %d: x %g ≈ %g·%d off by %.3g > d/2", b, v, a.d[b], q, e)
			}
		}
		if math.Abs(sum-float64(a.s[b])) > 64*0x1p-24*math.Abs(sum) {
			t.Fatalf("block %d: s %g, want %g", b, a.s[b], sum)
		}
		if zero := b == 2 || b == 3; !zero && top != qMax || zero && (top != 0 || a.d[b] != 0) {
			t.Fatalf("block %d: largest |q| %d, d %g", b, top, a.d[b])
		}
	}
}

// TestQuantKernelsSameIntegerSums: the SIMD kernels (AVX-512, AVX2) compute the plain-Go
// kernels' integer products, so the two differ only by float32 rounding of the scaled (partial)
// block sums, added in other orders: |simd − go| ≤ 2·2(nb+4)·u·Σ_b (|d_w·d_a|·Σ_j |q_w·q_a| +
// |m_w·Σx|). A block summed from the wrong quants is off by a whole d_w·d_a at least. Random
// rows and x (seeded), 1 … 66 blocks (odd counts; SmolLM2's 576 and 1536 columns), 1, 5 and 7
// rows (the kernels compute 4 a step).
func TestQuantKernelsSameIntegerSums(t *testing.T) {
	sets := simdKernelSets()
	if len(sets) == 0 {
		t.Skip("no SIMD kernels in this build or on this CPU")
	}
	seed := vecSeed(t)
	for _, k := range sets {
		for _, f := range []gguf.TensorType{gguf.TensorQ4_1, gguf.TensorQ8_0} {
			for _, cols := range []int{32, 64, 96, 128, 160, 256, 288, 576, 1536, 2080, 2112} { // 1 … 66 blocks
				for _, nr := range []int{1, 5, 7} {
					t.Run(fmt.Sprintf("%s/%s/%dx%d", k.name, f, nr, cols), func(t *testing.T) {
						testSameIntegerSums(t, k, planar, f, nr, cols, seed+uint64(cols*8+nr))
					})
				}
			}
		}
	}
}

// testSameIntegerSums is TestQuantKernelsSameIntegerSums for one kernel set and shape; k reads
// the rows as layout lays them out, the plain-Go kernels planar.
func testSameIntegerSums(t *testing.T, k quantKernels, layout func(*quant.Matrix) []byte, f gguf.TensorType, nr, cols int, seed uint64) {
	m := randomPacked(t, f, nr, cols, seed)
	rows, planarRows := layout(m), planar(m)
	rng := rand.New(rand.NewPCG(seed, 5))
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * float32(math.Ldexp(1, rng.IntN(9)-4))
	}
	a := &qAct{}
	quantiseX(x, a)
	q4 := f == gguf.TensorQ4_1
	if k.layout != nil {
		k.layout(q4, a)
	}
	dot, ref := k.q8_0, goQuantKernels.q8_0
	if q4 {
		dot, ref = k.q4_1, goQuantKernels.q4_1
	}
	nb := cols / 32
	got, want := make([]float32, nr), make([]float32, nr)
	dot(rows, a, got)
	ref(planarRows, a, want)
	for r := range nr {
		var abs float64
		for b := range nb {
			blk := m.Row(r)[b*f.BlockBytes() : (b+1)*f.BlockBytes()] // GGUF block: d, (m,) quants
			d := float64(gguf.Float16(enc.LittleEndian.Uint16(blk)))
			var qq float64 // Σ_j |q_w·q_a|
			for j := range 32 {
				var qw float64
				if q4 {
					qw = float64(blk[4+j%16] >> (4 * (j / 16)) & 0x0f)
				} else {
					qw = float64(int8(blk[2+j]))
				}
				qq += math.Abs(qw * float64(a.q[32*b+j]))
			}
			abs += math.Abs(d*float64(a.d[b])) * qq
			if q4 {
				abs += math.Abs(float64(gguf.Float16(enc.LittleEndian.Uint16(blk[2:]))) * float64(a.s[b]))
			}
		}
		bound := 4 * float64(nb+4) * 0x1p-24 * abs
		if d := math.Abs(float64(got[r]) - float64(want[r])); d > bound || math.IsNaN(float64(got[r])) {
			t.Fatalf("row %d: %s %g, go %g (off by %.3g > %.3g)", r, k.name, got[r], want[r], d, bound)
		}
	}
}

// TestHalves16 compares the AVX-512 kernels' vector half conversion (times 2¹¹²) with f16 on
// every 16-bit pattern, 16 at a time, and TestHalves8 the AVX2 kernels' 8 at a time — finite
// halves exactly; Inf and NaN patterns (quant.NewMatrix refuses them as scales) as f16 maps
// them — and check that the raw conversion is finite for every pattern: the kernels multiply
// the lanes past a row's last block, which hold any bytes, by zero.
func TestHalves16(t *testing.T) { testHalves(t, 16, halves16Into) }

func TestHalves8(t *testing.T) { testHalves(t, 8, halves8Into) }

// testHalves checks conv, which converts n halves (2n bytes) into n float32 or reports false
// where this build or CPU lacks it.
func testHalves(t *testing.T, n int, conv func(src []byte, dst []float32) bool) {
	got := make([]float32, n)
	src := make([]byte, 2*n)
	for h0 := 0; h0 < 1<<16; h0 += n {
		for i := range n {
			enc.LittleEndian.PutUint16(src[2*i:], uint16(h0+i))
		}
		if !conv(src, got) {
			t.Skipf("no %d-lane SIMD half conversion in this build or on this CPU", n)
		}
		for i, v := range got {
			want := f16(src[2*i:])
			if math.Float32bits(v) != math.Float32bits(want) {
				t.Fatalf("half %#04x: %g, want %g", h0+i, v, want)
			}
			if raw := float64(v) * 0x1p-112; math.IsInf(raw, 0) || math.IsNaN(raw) || raw*0 != 0 {
				t.Fatalf("half %#04x: raw lane %g is not finite", h0+i, raw)
			}
		}
	}
}

// TestQuantiseSIMD: each SIMD set's quantise gives quantiseX's d and q bit for bit and its s
// within the reordered sum's bound, on random x (seeded) of 1 … 48 blocks with blocks of zeros,
// of tiny values (below tinyBlock), ±Inf (d +Inf) and NaN (d NaN, q zero), and zero padding.
func TestQuantiseSIMD(t *testing.T) {
	sets := simdKernelSets()
	if len(sets) == 0 {
		t.Skip("no SIMD kernels in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(vecSeed(t), 13))
	for _, k := range sets {
		for _, nb := range []int{1, 2, 3, 17, 18, 48} {
			x := make([]float32, 32*nb)
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * float32(math.Ldexp(1, rng.IntN(40)-20))
			}
			for b := range nb {
				xb := x[32*b : 32*b+32]
				switch rng.IntN(8) {
				case 0:
					clear(xb)
				case 1:
					for j := range xb {
						xb[j] *= 0x1p-100
					}
				case 2:
					xb[rng.IntN(32)] = float32(math.Inf(1 - 2*rng.IntN(2)))
				case 3:
					xb[rng.IntN(32)] = float32(math.NaN())
				}
			}
			ref, a := &qAct{}, &qAct{d: slices.Repeat([]float32{9}, 64), s: slices.Repeat([]float32{9}, 64)}
			quantiseX(x, ref)
			k.quantise(x, a)
			bits := func(v []float32) []uint32 {
				out := make([]uint32, len(v))
				for i, f := range v {
					out[i] = math.Float32bits(f)
				}
				return out
			}
			if a.nb != nb || !slices.Equal(bits(a.d), bits(ref.d)) || !slices.Equal(a.q, ref.q) {
				t.Fatalf("%s, %d blocks: d or q differ from quantiseX's: d %v, want %v", k.name, nb, a.d, ref.d)
			}
			for b := range len(a.s) {
				var bound float64
				if b < nb {
					for _, v := range x[32*b : 32*b+32] {
						bound += 64 * 0x1p-24 * math.Abs(float64(v))
					}
				}
				if d := math.Abs(float64(a.s[b] - ref.s[b])); !(d <= bound) && !(math.IsNaN(float64(ref.s[b])) && math.IsNaN(float64(a.s[b]))) && a.s[b] != ref.s[b] {
					t.Fatalf("%s, %d blocks: s[%d] = %g, want %g ± %.3g", k.name, nb, b, a.s[b], ref.s[b], bound)
				}
			}
		}
	}
}

// TestQuantNaN: a NaN in x makes every y NaN, as the float32 product does, with every kernel
// set and format.
func TestQuantNaN(t *testing.T) {
	kernels := quantKernelSets()
	for _, f := range []gguf.TensorType{gguf.TensorQ4_1, gguf.TensorQ8_0} {
		m := randomPacked(t, f, 8, 576, 11)
		h := quant.Header{Format: f, Rows: 8, Cols: 576, Bt: 1}
		x := make([]float32, 576)
		for i := range x {
			x[i] = float32(i%5) - 2
		}
		x[100] = float32(math.NaN())
		for _, k := range kernels {
			y := make([]float32, 8)
			quantMatMul(k, h, planar(m), x, 1, y, 1)
			for r, v := range y {
				if !math.IsNaN(float64(v)) {
					t.Fatalf("%s %s: y[%d] = %g, want NaN", f, k.name, r, v)
				}
			}
		}
	}
}
